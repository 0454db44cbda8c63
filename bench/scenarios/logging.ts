/**
 * `logging`: what per-request logging costs. The detail again, on a second cms-shield with
 * `LOG_LEVEL=info` (one JSON line per request, to a file), against the first one at `warn` in the
 * same round: warn, info, info, warn. See bench/README.md, scenario `logging`.
 * @module
 */
import { statSync } from 'node:fs'
import type { BenchContext } from '../lib/context.js'
import { runLoad } from '../lib/load.js'
import type { LoadSample, LoadTarget } from '../lib/load.js'
import { fmtInt, fmtMs, fmtRatio } from '../lib/report.js'
import type { Shield } from '../lib/shield.js'
import { mean, round } from '../lib/stats.js'
import type { ThroughputResult } from '../lib/throughput-measure.js'

/** `warnDetail`: the detail row's result, when it ran, for the JSON. */
export async function loggingScenario(ctx: BenchContext, warnShield: Shield, detailId: number, warnDetail: ThroughputResult | undefined): Promise<void> {
  const { config, startShield } = ctx
  const { rows, results, log, skip } = ctx.recorder
  const { spareMs, estimateMs } = ctx.schedule
  const { quiet, measure } = ctx.pacing
  const title = 'detail hit, LOG_LEVEL=info (one request log line each)'
  if (spareMs('logging') < estimateMs('logging')) {
    skip(title, 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  log(`${title}: starting a second cms-shield with LOG_LEVEL=info (its log goes to a file)`)
  const infoShield = await startShield('cms-shield-info', 'info', 60_000)
  try {
    const path = `/api/v1/cms/pages/${detailId}/`
    const spec = { paths: [path], connections: config.connections, expectStatus: 200 }
    const infoTarget: LoadTarget = { ...infoShield, name: 'cms-shield (info)' }
    const warnTarget: LoadTarget = { ...warnShield, name: 'cms-shield (warn)' }
    await runLoad(infoTarget, { ...spec, durationS: Math.max(3, config.warmupS) })
    await runLoad(warnTarget, { ...spec, durationS: config.warmupS || 1 })
    const logBytesBefore = statSync(infoShield.logFile).size
    const samples: LoadSample[] = []
    await quiet('logging', 'logging')
    for (const target of [warnTarget, infoTarget, infoTarget, warnTarget]) samples.push(await measure('logging', target, { ...spec, durationS: config.durationS }))
    const infoSamples = samples.filter((sample) => sample.target === infoTarget.name)
    const warnSamples = samples.filter((sample) => sample.target === warnTarget.name)
    const logBytes = statSync(infoShield.logFile).size - logBytesBefore
    const infoRequests = infoSamples.reduce((sum, sample) => sum + sample.requests, 0)
    const infoRate = mean(infoSamples.map((sample) => sample.rps))
    const warnRate = mean(warnSamples.map((sample) => sample.rps))
    const infoCost = mean(infoSamples.map((sample) => sample.serverCpuUsPerRequest ?? Number.NaN))
    const warnCost = mean(warnSamples.map((sample) => sample.serverCpuUsPerRequest ?? Number.NaN))
    results.logging = { samples, logBytes, infoRequests, logBytesPerRequest: round(logBytes / Math.max(1, infoRequests), 1), warnDetailRate: warnDetail?.targets['cms-shield']?.rps ?? null }
    rows.push({
      scenario: title,
      shield:
        `${fmtInt(infoRate)} req/s · p99 ${fmtMs(mean(infoSamples.map((s) => s.latencyMs.p99)))} = ${fmtRatio(infoRate / warnRate)} of LOG_LEVEL=warn (${fmtInt(warnRate)} req/s, same run); ` +
        `${Number.isFinite(infoCost - warnCost) ? `+${(infoCost - warnCost).toFixed(1)} µs CPU and ` : ''}${fmtInt(logBytes / Math.max(1, infoRequests))} B of log per request`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: '— (cost of request logging)',
      met: '—',
    })
  } finally {
    await infoShield.child.stop()
  }
}
