/**
 * `large`: a fresh cms-shield against `BENCH_PAGES_LARGE` pages. Its memory after the sync; without
 * load, one listing pass and one edit until served; then detail hits while snapshots swap against
 * steady runs (scenarios/large-swaps.ts), with max latency, event-loop lag and load shedding
 * beside p99, once with autocannon and once with wrk. See bench/README.md, scenario `large`.
 * @module
 */
import { performance } from 'node:perf_hooks'
import { ORIGIN_PAGE_SIZE } from '../lib/config.js'
import type { ScenarioId } from '../lib/config.js'
import type { BenchContext } from '../lib/context.js'
import { call, metricSum, postJson, sleep, waitFor } from '../lib/http.js'
import type { LoadSample } from '../lib/load.js'
import { originHits, resetHits, setLatency } from '../lib/origin-control.js'
import type { SiteInfo } from '../lib/origin-control.js'
import { processMemory } from '../lib/processes.js'
import { check, fmtBytes, fmtInt, fmtMs, fmtRatio, verdict } from '../lib/report.js'
import { afterOneSync, shieldIdle, shieldMetrics } from '../lib/shield.js'
import { mean, round } from '../lib/stats.js'
import { harnessRows, summarizeTarget } from '../lib/throughput-measure.js'
import type { ThroughputResult } from '../lib/throughput-measure.js'
import { wrkAvailable } from '../lib/wrk.js'
import { autocannonRunner, steadyAndSwapRuns, wrkRunner } from './large-swaps.js'
import type { LargeRun } from './large-swaps.js'

/** "1 GB" of the target, in bytes. */
const MEMORY_TARGET_BYTES = 1_000_000_000
/** p99 while snapshots swap, at most this many times the steady p99. */
const SWAP_P99_TARGET = 1.5

/** The steady and swapping runs of the large site, shaped for the harness table. */
function largeResult(label: string, samples: LoadSample[]): ThroughputResult {
  return {
    id: label as ScenarioId,
    title: label,
    path: '',
    requestHeaders: {},
    bodyBytes: 0,
    shieldHeaders: {},
    targets: { 'cms-shield': summarizeTarget(samples.map((sample) => ({ ...sample, round: 0 })), 1) },
    ratios: {},
    samples: [],
  }
}

/** `harnessCpu`: where wrk runs (the harness's core), undefined when unpinned. */
export async function largeScenario(ctx: BenchContext, harnessCpu: number | undefined): Promise<void> {
  const { config, origin, startShield } = ctx
  const { rows, results, addCheck, log, warn, skip } = ctx.recorder
  const { spareMs, estimateMs } = ctx.schedule
  const n = config.largePages
  const title = `${fmtInt(n)} pages`
  if (spareMs('large') < estimateMs('large') * 0.6) {
    skip(title, 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  const site = await postJson<SiteInfo>(`${origin.control}/site`, { pages: n }, 120_000)
  await setLatency(origin, 0)
  await resetHits(origin)
  log(`${title}: origin regenerated in ${site.generatedMs ?? '?'} ms; starting a fresh cms-shield`)
  const readyBudget = spareMs('large') - (4 * config.durationS + 2 * config.warmupS) * 1000 - 10_000
  const shield = await startShield('cms-shield-large', 'warn', Math.max(10_000, readyBudget))
  try {
    await sleep(1_000)
    const metrics = await shieldMetrics(shield)
    const rss = metricSum(metrics, 'cms_shield_process_resident_memory_bytes')
    const heapUsed = metricSum(metrics, 'cms_shield_nodejs_heap_size_used_bytes')
    const syncS = metricSum(metrics, 'cms_shield_sync_duration_seconds_sum')
    const memory = processMemory(shield.pid)
    const hits = await originHits(origin)
    const rssCheck = addCheck(check(`${title}: RSS after sync (bytes)`, rss, '<=', MEMORY_TARGET_BYTES))
    log(`  synced in ${syncS.toFixed(1)} s (${hits.total} CMS requests); RSS ${fmtBytes(rss)}, heap used ${fmtBytes(heapUsed)}, peak RSS ${fmtBytes(memory?.peakRss)}`)
    rows.push({
      scenario: `${title}: memory after sync`,
      shield: `RSS ${fmtBytes(rss)} · heap used ${fmtBytes(heapUsed)} · peak RSS ${fmtBytes(memory?.peakRss)} (sync ${syncS.toFixed(1)} s, ready ${(shield.readyAfterMs / 1000).toFixed(1)} s after spawn, ${fmtInt(hits.total)} CMS requests)`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: '≤ 1 GB RSS',
      met: verdict(rssCheck),
    })

    // Without load: how long one listing pass (a PURGE of an unknown path) takes at this size, and
    // how long an edit takes from its PURGE to the swapped-in snapshot.
    await shieldIdle(shield, 60_000)
    await resetHits(origin)
    const resyncMs = await afterOneSync(shield, 120_000, async () => {
      const response = await call(`${shield.origin}/nowhere/`, { method: 'PURGE' })
      if (response.status !== 200) throw new Error(`PURGE /nowhere/: ${response.status}`)
    })
    const resyncHits = await originHits(origin)
    await shieldIdle(shield, 60_000)
    const versionBefore = metricSum(await shieldMetrics(shield), 'cms_shield_snapshot_version')
    const editStarted = performance.now()
    const edit = await postJson<{ path: string }>(`${origin.control}/edit`, {}, 5_000)
    await call(`${shield.origin}${edit.path}`, { method: 'PURGE' })
    await waitFor('the edit to be swapped in', 120_000, 50, async () =>
      metricSum(await shieldMetrics(shield), 'cms_shield_snapshot_version') > versionBefore ? true : undefined)
    const editToSwapMs = performance.now() - editStarted
    log(`  without load: a listing pass takes ${(resyncMs / 1000).toFixed(2)} s (${resyncHits.total} CMS requests); an edit is served ${(editToSwapMs / 1000).toFixed(2)} s after its PURGE`)
    rows.push({
      scenario: `${title}: without load, PURGE of an unknown path (listing pass) / edit + PURGE until served`,
      shield: `${(resyncMs / 1000).toFixed(2)} s, ${fmtInt(resyncHits.total)} CMS requests / ${(editToSwapMs / 1000).toFixed(2)} s`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: `— (≤ ceil(N/${ORIGIN_PAGE_SIZE}) + 2 = ${Math.ceil(n / ORIGIN_PAGE_SIZE) + 2} requests)`,
      met: '—',
    })

    const paths = site.sampleIds.map((id) => `/api/v1/cms/pages/${id}/`)
    // A swap run must hold a few swaps: at this size one listing pass can take longer than BENCH_DURATION.
    const swapDurationS = Math.min(30, Math.max(config.durationS, Math.ceil((2.5 * Math.max(resyncMs, editToSwapMs)) / 1000)))
    // The row was first measured with autocannon, which saturates the harness's core by itself, so
    // whatever else runs there (the fake CMS answering an edit) shows up as readers' latency. wrk
    // needs a fraction of that core; its row stands beside autocannon's, which is kept as it was.
    const loaders = [autocannonRunner(shield, { paths, connections: config.connections, expectStatus: 200 })]
    if (wrkAvailable()) loaders.push(wrkRunner(shield, paths, config.connections, harnessCpu))
    else warn(`${title}: wrk is not installed (apt-get install -y wrk); the swap row is measured with autocannon only`)
    const runs: LargeRun[] = []
    for (const loader of loaders) {
      await loader.run(Math.max(2, config.warmupS))
      const measured = await steadyAndSwapRuns(ctx, shield, loader, swapDurationS)
      runs.push(...measured)
      swapRow(ctx, title, loader.name, swapDurationS, measured, shield.pid)
    }
    results.large = {
      pages: site.pages,
      syncS,
      readyAfterMs: round(shield.readyAfterMs, 0),
      cmsRequests: hits,
      rss,
      heapUsed,
      peakRss: memory?.peakRss ?? null,
      resync: { ms: round(resyncMs, 0), cmsRequests: resyncHits },
      editToSwapMs: round(editToSwapMs, 0),
      swapDurationS,
      snapshotVersion: metricSum(await shieldMetrics(shield), 'cms_shield_snapshot_version'),
      peakRssAfterSwaps: processMemory(shield.pid)?.peakRss ?? null,
      runs,
    }
  } finally {
    await shield.child.stop()
  }
}

/** The row (and checks) of one load generator's steady and swap runs. */
function swapRow(ctx: BenchContext, title: string, loader: string, swapDurationS: number, runs: readonly LargeRun[], pid: number): void {
  const { rows, harness, addCheck, warn } = ctx.recorder
  const { config } = ctx
  const steady = runs.filter((run) => run.mode === 'steady')
  const swapping = runs.filter((run) => run.mode === 'swap')
  const samples = (of: readonly LargeRun[]) => of.flatMap((run) => (run.autocannon ? [run.autocannon] : []))
  if (samples(runs).length > 0) harness.push(...harnessRows(largeResult('large steady', samples(steady))), ...harnessRows(largeResult('large swapping', samples(swapping))))
  const steadyP99 = mean(steady.map((run) => run.p99Ms))
  const swapP99 = mean(swapping.map((run) => run.p99Ms))
  const swaps = swapping.reduce((sum, run) => sum + run.swaps, 0)
  const purges = swapping.reduce((sum, run) => sum + run.purges, 0)
  const failed = runs.reduce((sum, run) => sum + run.failed, 0)
  const swapMax = Math.max(...swapping.map((run) => run.maxMs))
  const swapLag = Math.max(...swapping.map((run) => run.loopLagMaxMs))
  const steadyLag = Math.max(...steady.map((run) => run.loopLagMaxMs))
  const gcs = (of: readonly LargeRun[]) => `${of.reduce((sum, run) => sum + run.majorGcs, 0)} (${round(of.reduce((sum, run) => sum + run.majorGcMs, 0), 0)} ms)`
  const swapCheck = addCheck(check(`${title}: p99 during swaps / steady (${loader})`, swapP99 / steadyP99, '<=', SWAP_P99_TARGET))
  if (swaps === 0) warn(`${title}: no snapshot was swapped in during the ${loader} swap runs (${purges} PURGEs sent)`)
  if (failed > 0) warn(`${title}: ${failed} detail requests were not answered 200 during the ${loader} runs (503 is load shedding; event-loop lag up to ${swapLag.toFixed(0)} ms during swaps)`)
  rows.push({
    scenario: `${title}: detail p99 while snapshots swap (edit + PURGE every ${config.swapIntervalMs} ms) vs steady, load from ${loader}`,
    shield:
      `p99 ${fmtMs(swapP99)} vs ${fmtMs(steadyP99)} steady = ${fmtRatio(swapP99 / steadyP99)}; ` +
      `${fmtInt(mean(swapping.map((run) => run.rps)))} vs ${fmtInt(mean(steady.map((run) => run.rps)))} req/s; ` +
      `${swaps} swaps from ${purges} PURGEs in ${swapping.length * swapDurationS} s; max latency ${fmtMs(swapMax, 0)}, ` +
      `event-loop lag up to ${swapLag.toFixed(0)} ms (steady ${steadyLag.toFixed(0)} ms); mark-compacts ${gcs(swapping)} during swaps, ${gcs(steady)} steady; ` +
      `${fmtInt(failed)} answers not 200 (503 is load shedding); ` +
      `peak RSS ${fmtBytes(processMemory(pid)?.peakRss)}`,
    fastify: '—',
    node: '—',
    vsFastify: '—',
    vsNode: '—',
    target: `≤ ${SWAP_P99_TARGET}x steady p99`,
    met: `${verdict(swapCheck)} on p99${failed > 0 || swapMax > 20 * steadyP99 ? `, but max ${fmtMs(swapMax, 0)}${failed > 0 ? ` and ${fmtInt(failed)} not 200` : ''}` : ''}`,
  })
}
