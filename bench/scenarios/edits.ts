/**
 * `edits`: what one edit costs a cluster at `BENCH_PAGES_LARGE` pages. Three cms-shields share a
 * private Redis (one syncs, two follow) behind one BASE_URL; `BENCH_EDITS` single-page edits
 * (a new title on the fake CMS, then a PURGE of that page at the syncing instance) go out one after
 * the other, each timed from the CMS showing it until a follower serves it. Per edit: CPU of the
 * syncing instance and of each follower (`/proc`, less what each spends idle over as long: lease
 * ticks and polls) and bytes the instances sent Redis (`INFO stats` `total_net_input_bytes`, less
 * the idle rate). Then the CMS is stopped and a fourth instance starts from Redis alone: how long
 * until it is ready, and whether it serves every edit. See bench/README.md, scenario `edits`.
 * @module
 */
import { performance } from 'node:perf_hooks'
import type { BenchContext } from '../lib/context.js'
import { call, postJson, sleep, waitFor } from '../lib/http.js'
import { setLatency } from '../lib/origin-control.js'
import type { SiteInfo } from '../lib/origin-control.js'
import { processCpuSeconds } from '../lib/processes.js'
import { startCluster } from '../lib/cluster.js'
import { check, fmtBytes, fmtInt, fmtMs, verdict } from '../lib/report.js'
import type { Shield } from '../lib/shield.js'
import { percentileOfSorted } from '../lib/stats.js'

const CPU_TARGET_MS = 20
const BYTES_TARGET = 100_000
const SERVED_TARGET_MS = 1_000
const READY_TARGET_MS = 3_000
const IDLE_WINDOW_MS = 10_000

const cpuMs = (shield: Shield): number => (processCpuSeconds(shield.pid) ?? Number.NaN) * 1000

async function titleOf(shield: Shield, path: string): Promise<string | undefined> {
  const response = await call(`${shield.origin}${path}`, { timeoutMs: 5_000 })
  if (response.status !== 200) return undefined
  return (JSON.parse(response.body.toString('utf8')) as { title?: string }).title
}

export async function editsScenario(ctx: BenchContext, edits: number): Promise<void> {
  const { config, origin, startShield } = ctx
  const { rows, results, addCheck, log } = ctx.recorder
  const n = config.largePages
  const title = `${fmtInt(n)} pages, 3 instances + Redis`
  const site = await postJson<SiteInfo>(`${origin.control}/site`, { pages: n }, 120_000)
  await setLatency(origin, 0)
  log(`${title}: origin regenerated in ${site.generatedMs ?? '?'} ms; starting Redis and the syncing instance`)
  // Every edit of the run a patch, so the late instance starts from the full snapshot and all of
  // them; the whole snapshot written every SNAPSHOT_PATCHES_PER_FULL edits is priced apart.
  const cluster = await startCluster(ctx, 'edits', { SNAPSHOT_PATCHES_PER_FULL: String(edits + 10) })
  const { redis, leader, followers, shields, env } = cluster
  try {
    log(`  ready: leader ${(leader.readyAfterMs / 1000).toFixed(1)} s, followers ${followers.map((f) => (f.readyAfterMs / 1000).toFixed(1)).join(' s, ')} s after spawn`)
    const [followerA, followerB] = followers

    // Warm-up edits (the code paths JIT-compiled, the patch log begun), not counted.
    const editOnce = async (): Promise<{ path: string; title: string; servedMs: number }> => {
      const edit = await postJson<{ id: number; title: string; path: string }>(`${origin.control}/edit`, {}, 5_000)
      const shown = performance.now()
      const purge = await call(`${leader.origin}${edit.path}`, { method: 'PURGE', timeoutMs: 5_000 })
      if (purge.status !== 200) throw new Error(`PURGE ${edit.path}: ${purge.status}`)
      // Not served within 30 s counts as never (NaN), and the run goes on.
      const served = await waitFor(`follower serves "${edit.title}"`, 30_000, 5, async () => ((await titleOf(followerA, edit.path)) === edit.title ? true : undefined))
        .catch((error: unknown) => (log(`  ${error instanceof Error ? error.message : String(error)}`), false))
      return { path: edit.path, title: edit.title, servedMs: served ? performance.now() - shown : Number.NaN }
    }
    for (let i = 0; i < 3; i++) await editOnce()
    await sleep(1_000)

    // What each process spends doing nothing (lease ticks, polls) over as long as the edits take.
    const idleStart = { cpu: shields.map(cpuMs), bytes: await redis.inputBytes(), at: performance.now() }
    await sleep(IDLE_WINDOW_MS)
    const idleMs = performance.now() - idleStart.at
    const idleCpuRate = shields.map((shield, i) => (cpuMs(shield) - idleStart.cpu[i]!) / idleMs)
    const idleByteRate = ((await redis.inputBytes()) - idleStart.bytes) / idleMs

    const before = { cpu: shields.map(cpuMs), bytes: await redis.inputBytes(), at: performance.now() }
    const done: Array<{ path: string; title: string; servedMs: number }> = []
    for (let i = 0; i < edits; i++) done.push(await editOnce())
    await waitFor('the other follower serves the last edit', 30_000, 20, async () =>
      ((await titleOf(followerB, done.at(-1)!.path)) === done.at(-1)!.title ? true : undefined))
    const elapsedMs = performance.now() - before.at
    const rawCpu = shields.map((shield, i) => cpuMs(shield) - before.cpu[i]!)
    const perEdit = rawCpu.map((ms, i) => (ms - idleCpuRate[i]! * elapsedMs) / edits)
    const rawBytes = (await redis.inputBytes()) - before.bytes
    const bytesPerEdit = Math.round((rawBytes - idleByteRate * elapsedMs) / edits)
    const patches = await redis.client.lrangeBuffer('bench-edits:snapshot:patches', 0, -1)
    const patchBytes = patches.map((patch) => patch.length).sort((a, b) => a - b)
    const served = done.map((edit) => edit.servedMs).filter(Number.isFinite).sort((a, b) => a - b)
    const unserved = edits - served.length
    const servedP50 = percentileOfSorted(served, 50)
    const servedMax = unserved > 0 ? Number.POSITIVE_INFINITY : served.at(-1)!
    const [leaderCpu, followerACpu, followerBCpu] = perEdit as [number, number, number]
    log(`  per edit: CPU leader ${leaderCpu.toFixed(1)} ms, followers ${followerACpu.toFixed(1)} / ${followerBCpu.toFixed(1)} ms; Redis input ${fmtBytes(bytesPerEdit)}; served by a follower after ${fmtMs(servedP50)} median, ${fmtMs(served.at(-1))} max${unserved > 0 ? `, ${unserved} never` : ''}`)
    const cpuCheck = addCheck(check(`${title}: CPU per edit, syncing instance (ms)`, leaderCpu, '<=', CPU_TARGET_MS))
    const followerCheck = addCheck(check(`${title}: CPU per edit, follower (ms)`, Math.max(followerACpu, followerBCpu), '<=', CPU_TARGET_MS))
    const bytesCheck = addCheck(check(`${title}: bytes written to Redis per edit`, bytesPerEdit, '<=', BYTES_TARGET))
    const servedCheck = addCheck(check(`${title}: edit served by a follower (max ms)`, servedMax, '<=', SERVED_TARGET_MS))
    rows.push({
      scenario: `${title}: one-page edit, CPU per edit on the syncing instance / each follower`,
      shield: `${leaderCpu.toFixed(1)} ms / ${followerACpu.toFixed(1)} ms, ${followerBCpu.toFixed(1)} ms (mean of ${edits}, idle CPU subtracted; raw ${rawCpu.map((ms) => (ms / edits).toFixed(1)).join(' / ')} ms)`,
      fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
      target: `≤ ${CPU_TARGET_MS} ms each`,
      met: `${verdict(cpuCheck)} / ${verdict(followerCheck)}`,
    })
    rows.push({
      scenario: `${title}: bytes the instances sent Redis per edit`,
      shield: `${fmtBytes(bytesPerEdit)} (INFO total_net_input_bytes, idle rate subtracted; raw ${fmtBytes(Math.round(rawBytes / edits))}); stored patch ${fmtBytes(percentileOfSorted(patchBytes, 50))} median, ${fmtBytes(Math.max(...patchBytes))} max, ${patches.length} in the log`,
      fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
      target: '≤ 100 KB',
      met: verdict(bytesCheck),
    })
    rows.push({
      scenario: `${title}: edit on the CMS until a follower serves it (PURGE at the syncing instance)`,
      shield: `${fmtMs(servedP50)} median, ${fmtMs(percentileOfSorted(served, 90))} p90, ${fmtMs(served.at(-1))} max over ${served.length} edits${unserved > 0 ? `; ${unserved} not served within 30 s` : ''}`,
      fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
      target: `≤ ${fmtMs(SERVED_TARGET_MS, 0)}`,
      met: verdict(servedCheck),
    })

    // The CMS goes away; a new instance starts from Redis alone.
    await origin.child.stop()
    const late = await startShield('cms-shield-edits-late', 'warn', 60_000, env)
    const lateReadyAt = performance.now()
    // Its CPU from spawn to ready (node's own start included): what the start costs, apart from
    // the wait for a core on a busy machine.
    const lateCpuMs = cpuMs(late)
    shields.push(late)
    const latest = new Map(done.map((edit) => [edit.path, edit.title]))
    // Just after /readyz turns 200, the load's long synchronous build may still count as event-loop
    // lag, and the pages API sheds with 503 until the next sample: timed apart.
    const [firstPath] = latest.keys()
    await waitFor('the new instance answers the pages API', 30_000, 10, async () =>
      ((await call(`${late.origin}${firstPath!}`, { timeoutMs: 5_000 })).status === 200 ? true : undefined))
    const answersAfterMs = late.readyAfterMs + (performance.now() - lateReadyAt)
    let servedEdits = 0
    for (const [path, expected] of latest) {
      const response = await call(`${late.origin}${path}`, { timeoutMs: 5_000 })
      const shown = response.status === 200 ? (JSON.parse(response.body.toString('utf8')) as { title?: string }).title : undefined
      if (shown === expected) servedEdits++
      else if (servedEdits === 0) log(`  the new instance answers ${path} with ${response.status} "${String(shown)}", not "${expected}"`)
    }
    const lateReady = JSON.parse((await call(`${late.origin}/readyz`)).body.toString('utf8')) as { snapshot?: { version?: number } }
    const leaderReady = JSON.parse((await call(`${leader.origin}/readyz`)).body.toString('utf8')) as { snapshot?: { version?: number } }
    log(`  snapshot versions: the new instance ${lateReady.snapshot?.version}, the syncing one ${leaderReady.snapshot?.version}`)
    const readyCheck = addCheck(check(`${title}: new instance ready from Redis with the CMS down (ms)`, late.readyAfterMs, '<=', READY_TARGET_MS))
    const everyCheck = addCheck(check(`${title}: edits the new instance serves`, servedEdits, '>=', latest.size))
    log(`  a new instance with the CMS down: ready ${fmtMs(late.readyAfterMs, 0)} after spawn (${fmtMs(lateCpuMs, 0)} of CPU), answering the API ${fmtMs(answersAfterMs, 0)} after spawn, serving ${servedEdits} of ${latest.size} edited pages as edited`)
    rows.push({
      scenario: `${title}: new instance after ${edits} edits, CMS down: spawn until ready / edits served`,
      shield: `${fmtMs(late.readyAfterMs, 0)}, ${fmtMs(lateCpuMs, 0)} of it on the CPU (the pages API answering 200 after ${fmtMs(answersAfterMs, 0)}) / ${servedEdits} of ${latest.size} edited pages`,
      fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
      target: `≤ ${fmtMs(READY_TARGET_MS, 0)} / all`,
      met: `${verdict(readyCheck)} / ${verdict(everyCheck)}`,
    })
    results.edits = {
      pages: site.pages, edits, perEditCpuMs: perEdit, rawCpuMs: rawCpu, idleCpuMsPerS: idleCpuRate.map((rate) => rate * 1000),
      bytesPerEdit, rawBytes, idleBytesPerS: idleByteRate * 1000, patchBytes, servedMs: served, unserved,
      readyAfterMs: { leader: leader.readyAfterMs, followers: followers.map((f) => f.readyAfterMs), late: late.readyAfterMs }, lateAnswersAfterMs: answersAfterMs, lateCpuMs, servedEdits,
    }
  } finally {
    await cluster.stop()
  }
}
