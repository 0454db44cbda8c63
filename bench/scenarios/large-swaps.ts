/**
 * The `large` scenario's runs under load: detail hits spread over the site, in the order steady,
 * swap, swap, steady. During a swap run an edit on the fake CMS and a PURGE of that page go out
 * every `BENCH_SWAP_INTERVAL_MS`, so snapshots are swapped in while cms-shield answers. A steady run
 * starts once the syncs a swap run queued have finished. See bench/README.md, scenario `large`.
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

export type LargeRun = LoadSample & { mode: 'steady' | 'swap'; swaps: number; purges: number; editErrors: number; loopLagMaxMs: number; shed: number }

/** `swapDurationS`: a swap run's length, long enough to hold a few swaps. */
export async function steadyAndSwapRuns(ctx: BenchContext, shield: Shield, spec: Omit<LoadSpec, 'durationS'>, swapDurationS: number): Promise<LargeRun[]> {
  const { config, origin } = ctx
  const { quiet } = ctx.pacing
  const metricsNow = async (): Promise<MetricSample[]> => shieldMetrics(shield)
  const runs: LargeRun[] = []
  for (const mode of ['steady', 'swap', 'swap', 'steady'] as const) {
    // A steady run starts once the syncs that the last swap run queued have finished.
    if (mode === 'steady') await shieldIdle(shield, 120_000)
    await quiet('large', `large ${mode}`)
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
    let sample: LoadSample
    try {
      sample = await runLoad(shield, { ...spec, durationS: mode === 'swap' ? swapDurationS : config.durationS })
    } finally {
      running = false
      await editor
    }
    const after = await metricsNow()
    runs.push({
      ...sample,
      mode,
      swaps: metricSum(after, 'cms_shield_snapshot_swaps_total') - metricSum(before, 'cms_shield_snapshot_swaps_total'),
      purges,
      editErrors,
      loopLagMaxMs: round(metricSum(after, 'cms_shield_nodejs_eventloop_lag_max_seconds') * 1000, 1),
      shed: sample.statuses['503'] ?? 0,
    })
  }
  return runs
}
