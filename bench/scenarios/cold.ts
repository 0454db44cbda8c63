/**
 * `cold`: many clients at once on a key cms-shield has never seen, with the fake CMS answering in
 * `BENCH_COLD_DELAY_MS`. It counts the CMS requests (the misses must collapse into one) and times
 * every waiter, beside four references: one request straight to the origin, one client alone on a
 * cold key, the same burst again as hits, and the bare node baseline answering the burst at once
 * and held for the origin delay (a proxy that cost nothing). See bench/README.md, scenario `cold`.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { baselineHeaders } from '../lib/canned-response.js'
import type { BenchContext } from '../lib/context.js'
import { call, sleep } from '../lib/http.js'
import { originHits, resetHits, setLatency } from '../lib/origin-control.js'
import type { Hits } from '../lib/origin-control.js'
import { check, fmtMs, verdict } from '../lib/report.js'
import type { Shield } from '../lib/shield.js'
import { SocketClients, type BurstAnswer } from '../lib/socket-burst.js'
import { round, summarize } from '../lib/stats.js'

/** Untimed bursts on fresh keys before the cold-key rounds (bounded to 5 s). */
const COLD_WARM_BURSTS = 30

export async function coldScenario(ctx: BenchContext, shield: Shield): Promise<void> {
  const { config, origin, workDir, startBaseline } = ctx
  const { rows, results, addCheck, log, warn, skip } = ctx.recorder
  const { spareMs } = ctx.schedule
  const { quiet } = ctx.pacing
  const title = `cold key: ${config.coldClients} concurrent clients, origin delay ${config.coldDelayMs} ms`
  let clients: SocketClients | undefined
  let lastAnswer: BurstAnswer | undefined
  const rounds: Array<{ cmsRequests: Hits; latencies: number[]; statuses: Record<string, number>; cacheStatus: Record<string, number>; distinctBodies: number }> = []
  let directOriginMs = Number.NaN
  let singleClientMs = Number.NaN
  const warmBursts: number[] = []
  try {
    // Open every connection first, so the measured requests pay no TCP handshake.
    clients = await SocketClients.open(shield.origin, config.coldClients, '/healthz')
    // A cold key, not a cold process: a server in production has run its miss, collapse and
    // fan-out code many times before, so run it here too (fresh keys, no origin delay, untimed)
    // before anything is timed, as the throughput rows get their warm-up.
    const warmUntil = performance.now() + 5_000
    for (let i = 0; i < COLD_WARM_BURSTS && performance.now() < warmUntil; i++) {
      const path = `/api/v1/cms/pages/?search=warm-${randomUUID()}`
      await clients.burst(path) // one miss, the rest collapsed onto it or served what it stored
      await clients.burst(path) // all hits
    }
    await setLatency(origin, config.coldDelayMs)
    // What one request straight to the origin takes (its delay plus its own work on a search), for reference.
    const direct: number[] = []
    for (let i = 0; i < 3; i++) {
      const started = performance.now()
      const response = await call(`${origin.api}/api/v1/cms/pages/?search=direct-${randomUUID()}`, { timeoutMs: 30_000 })
      if (response.status === 200) direct.push(performance.now() - started)
    }
    directOriginMs = summarize(direct).p50
    // And one client alone on a cold key through cms-shield: the fixed cost of a read-through miss, without the fan-out.
    const single: number[] = []
    const alone = await SocketClients.open(shield.origin, 1, '/healthz')
    try {
      for (let i = 0; i < 3; i++) {
        const [answer] = await alone.burst(`/api/v1/cms/pages/?search=single-${randomUUID()}`)
        if (answer?.status === 200) single.push(answer.ms)
      }
    } finally {
      alone.close()
    }
    singleClientMs = summarize(single).p50
    for (let r = 0; r < config.rounds; r++) {
      if (spareMs('cold') < config.coldDelayMs * 4 + 5_000) break
      await quiet('cold', `cold key round ${r + 1}`)
      const path = `/api/v1/cms/pages/?search=cold-${randomUUID()}`
      await resetHits(origin)
      const answers = await clients.burst(path)
      lastAnswer = answers[0]
      await sleep(config.coldDelayMs + 200) // a second CMS request, if any, would land by now
      const cmsRequests = await originHits(origin)
      // The same burst again, now all hits: what answering 200 at once costs (cms-shield and this harness) without the wait.
      warmBursts.push(...(await clients.burst(path)).map((answer) => answer.ms))
      const statuses: Record<string, number> = {}
      const cacheStatus: Record<string, number> = {}
      for (const answer of answers) {
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
        const key = (answer.headers['cache-status'] ?? 'none').replace(/^cms-shield;\s*/, '').replace(/;\s*age=\d+/, '')
        cacheStatus[key] = (cacheStatus[key] ?? 0) + 1
      }
      const distinctBodies = new Set(answers.map((answer) => answer.body.toString('base64'))).size
      rounds.push({ cmsRequests, latencies: answers.map((answer) => round(answer.ms, 3)), statuses, cacheStatus, distinctBodies })
      log(`  cold key round ${r + 1}: ${cmsRequests.total} CMS request(s), p50 ${fmtMs(summarize(answers.map((a) => a.ms)).p50)}, statuses ${JSON.stringify(statuses)}`)
    }
  } finally {
    await setLatency(origin, 0).catch(() => undefined)
    clients?.close()
  }
  // The floors: the same burst against the bare node server holding the same body, answered at
  // once (what 200 answers cost this harness and machine) and held for the origin delay after the
  // first arrives (a zero-cost proxy in front of that origin: the best any server can do here).
  const floor: number[] = []
  const ideal: number[] = []
  if (lastAnswer && spareMs('cold') > 20_000) {
    const bodyFile = join(workDir, 'cold-body.bin')
    const headersFile = join(workDir, 'cold-headers.json')
    writeFileSync(bodyFile, lastAnswer.body)
    writeFileSync(headersFile, JSON.stringify(baselineHeaders(config.baselineHeaders, lastAnswer.headers)))
    for (const [holdMs, into] of [[0, floor], [config.coldDelayMs, ideal]] as const) {
      const baseline = await startBaseline('node', bodyFile, headersFile, { holdMs })
      let baselineClients: SocketClients | undefined
      try {
        baselineClients = await SocketClients.open(baseline.origin, config.coldClients, '/')
        for (let r = 0; r < rounds.length; r++) {
          into.push(...(await baselineClients.burst('/')).map((answer) => answer.ms))
          await sleep(100)
        }
      } finally {
        baselineClients?.close()
        await baseline.child.stop()
      }
    }
  }
  if (rounds.length === 0) {
    skip(title, 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  const all = summarize(rounds.flatMap((r) => r.latencies))
  const perRound = rounds.map((r) => summarize(r.latencies))
  const worstRequests = Math.max(...rounds.map((r) => r.cmsRequests.total))
  const requestsCheck = addCheck(check('cold key: CMS requests (worst round)', worstRequests, '==', 1))
  const p50Check = addCheck(check('cold key: waiter p50 (ms)', all.p50, '<=', config.coldDelayMs + 5))
  const bad = rounds.filter((r) => (r.statuses['200'] ?? 0) !== config.coldClients || r.distinctBodies !== 1)
  if (bad.length > 0) warn(`cold key: ${bad.length} round(s) had non-200 answers or differing bodies: ${JSON.stringify(bad.map((r) => r.statuses))}`)
  results.cold = { rounds: rounds.map((r) => ({ ...r, latency: summarize(r.latencies), latencies: undefined })), latency: all, directOriginMs: round(directOriginMs, 2), singleClientMs: round(singleClientMs, 2), warmBurst: summarize(warmBursts), nodeBaselineBurst: summarize(floor), nodeBaselineHeld: summarize(ideal) }
  rows.push({
    scenario: `${title}: CMS requests`,
    shield: `${rounds.map((r) => r.cmsRequests.total).join(', ')} (per round); answers ${JSON.stringify(rounds[0]?.cacheStatus ?? {})}`,
    fastify: '—',
    node: '—',
    vsFastify: '—',
    vsNode: '—',
    target: 'exactly 1',
    met: verdict(requestsCheck),
  })
  rows.push({
    scenario: `${title}: waiter latency`,
    shield:
      `p50 ${fmtMs(all.p50)} · p99 ${fmtMs(all.p99)} · min ${fmtMs(all.min)} · max ${fmtMs(all.max)} (round p50s: ${perRound.map((s) => s.p50.toFixed(1)).join(', ')}); ` +
      `one request straight to the origin: ${fmtMs(directOriginMs)}; one client alone on a cold key: ${fmtMs(singleClientMs)}; ` +
      `the same ${config.coldClients} again as hits: p50 ${fmtMs(summarize(warmBursts).p50)} · p99 ${fmtMs(summarize(warmBursts).p99)}`,
    fastify: '—',
    node: floor.length > 0
      ? `the same body, held ${config.coldDelayMs} ms after the first request, then all answered (a zero-cost proxy): p50 ${fmtMs(summarize(ideal).p50)} · p99 ${fmtMs(summarize(ideal).p99)}; ` +
        `answered at once: p50 ${fmtMs(summarize(floor).p50)} · p99 ${fmtMs(summarize(floor).p99)}`
      : '—',
    vsFastify: '—',
    vsNode: '—',
    target: `p50 ≤ ${config.coldDelayMs + 5} ms`,
    met: verdict(p50Check),
  })
}
