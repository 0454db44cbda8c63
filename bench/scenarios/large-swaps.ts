/**
 * The `large` scenario's runs under load: detail hits spread over the site, in the order steady,
 * swap, swap, steady. During a swap run an edit on the fake CMS and a PURGE of that page go out
 * every `BENCH_SWAP_INTERVAL_MS`, so snapshots are swapped in while cms-shield answers. A steady run
 * starts once the syncs a swap run queued have finished. The load comes from one of two load
 * generators (`LoadRunner`): autocannon in the harness, or wrk. See bench/README.md, scenario `large`.
 * @module
 */
import { performance } from 'node:perf_hooks'
import type { BenchContext } from '../lib/context.js'
import { call, metricSum, postJson, sleep } from '../lib/http.js'
import type { MetricSample } from '../lib/http.js'
import { runLoad } from '../lib/load.js'
import type { LoadSample, LoadSpec } from '../lib/load.js'
import { shieldIdle, shieldMetrics } from '../lib/shield.js'
import type { Shield } from '../lib/shield.js'
import { round } from '../lib/stats.js'
import { runWrk } from '../lib/wrk.js'

/** What one load run measured, whichever generator made the load. */
export interface LoadFigures {
  rps: number
  requests: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** Answers that were not 200 (503s of load shedding among them), and socket errors or timeouts. */
  failed: number
  /** Target CPU microseconds per answered request; null when /proc cannot tell. */
  serverCpuUsPerRequest: number | null
  /** autocannon's own sample (the harness's event-loop utilisation among it), for the harness table. */
  autocannon?: LoadSample
}

export interface LoadRunner {
  /** `autocannon` or `wrk`: named in the rows. */
  readonly name: string
  run(durationS: number): Promise<LoadFigures>
}

/**
 * `majorGcs` and `majorGcMs`: cms-shield's mark-compacts over the run and their pauses, from
 * prom-client's `nodejs_gc_duration_seconds{kind="major"}` (what old-generation growth per swap
 * costs its readers).
 */
export type LargeRun = LoadFigures & {
  loader: string
  mode: 'steady' | 'swap'
  swaps: number
  purges: number
  editErrors: number
  loopLagMaxMs: number
  majorGcs: number
  majorGcMs: number
}

const GC = 'cms_shield_nodejs_gc_duration_seconds'

/** autocannon in the harness's own event loop, as the row was first measured. */
export function autocannonRunner(shield: Shield, spec: Omit<LoadSpec, 'durationS'>): LoadRunner {
  return {
    name: 'autocannon',
    async run(durationS) {
      const sample = await runLoad(shield, { ...spec, durationS })
      return {
        rps: sample.rps,
        requests: sample.requests,
        p50Ms: sample.latencyMs.p50,
        p99Ms: sample.latencyMs.p99,
        maxMs: sample.latencyMs.max,
        failed: sample.unexpected + sample.errors + sample.timeouts,
        serverCpuUsPerRequest: sample.serverCpuUsPerRequest,
        autocannon: sample,
      }
    },
  }
}

/**
 * wrk, a separate C process on the harness's core: it needs a fraction of that core where
 * autocannon needs all of it, so the fake CMS's own work during an edit (on the same core) does
 * not hold back the readers' requests as well.
 */
export function wrkRunner(shield: Shield, paths: readonly string[], connections: number, cpu: number | undefined): LoadRunner {
  return {
    name: 'wrk',
    async run(durationS) {
      const sample = await runWrk(shield, { path: paths, connections, durationS, cpu })
      return {
        rps: sample.rps,
        requests: sample.requests,
        p50Ms: sample.p50Ms,
        p99Ms: sample.p99Ms,
        maxMs: sample.maxMs,
        failed: sample.bad + sample.errors,
        serverCpuUsPerRequest: sample.serverCpuUsPerRequest,
      }
    },
  }
}

/** `swapDurationS`: a swap run's length, long enough to hold a few swaps. */
export async function steadyAndSwapRuns(ctx: BenchContext, shield: Shield, loader: LoadRunner, swapDurationS: number): Promise<LargeRun[]> {
  const { config, origin } = ctx
  const { quiet } = ctx.pacing
  const metricsNow = async (): Promise<MetricSample[]> => shieldMetrics(shield)
  const runs: LargeRun[] = []
  for (const mode of ['steady', 'swap', 'swap', 'steady'] as const) {
    // A steady run starts once the syncs that the last swap run queued have finished.
    if (mode === 'steady') await shieldIdle(shield, 120_000)
    await quiet('large', `large ${mode} (${loader.name})`)
    const before = await metricsNow() // this scrape also resets the event-loop lag maximum
    let running = mode === 'swap'
    let purges = 0
    let editErrors = 0
    const editor = (async () => {
      while (running) {
        const tick = performance.now()
        try {
          const edited = await postJson<{ path: string }>(`${origin.control}/edit`, {}, 5_000)
          const response = await call(`${shield.origin}${edited.path}`, { method: 'PURGE', timeoutMs: 5_000 })
          if (response.status === 200) purges++
          else editErrors++
        } catch {
          editErrors++
        }
        await sleep(Math.max(0, config.swapIntervalMs - (performance.now() - tick)))
      }
    })()
    let figures: LoadFigures
    try {
      figures = await loader.run(mode === 'swap' ? swapDurationS : config.durationS)
    } finally {
      running = false
      await editor
    }
    const after = await metricsNow()
    runs.push({
      ...figures,
      loader: loader.name,
      mode,
      swaps: metricSum(after, 'cms_shield_snapshot_swaps_total') - metricSum(before, 'cms_shield_snapshot_swaps_total'),
      purges,
      editErrors,
      loopLagMaxMs: round(metricSum(after, 'cms_shield_nodejs_eventloop_lag_max_seconds') * 1000, 1),
      majorGcs: metricSum(after, `${GC}_count`, { kind: 'major' }) - metricSum(before, `${GC}_count`, { kind: 'major' }),
      majorGcMs: round((metricSum(after, `${GC}_sum`, { kind: 'major' }) - metricSum(before, `${GC}_sum`, { kind: 'major' })) * 1000, 1),
    })
  }
  return runs
}
