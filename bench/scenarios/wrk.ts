/**
 * The `wrk` scenario: the detail hit, the seed's menu list and the detail's 304, measured with wrk
 * (C, one thread, on the harness's core) as the serving process's CPU time per request, against
 * bare Fastify and bare node sending the body and only the five headers a cached Wagtail answer
 * needs (`content-type`, `vary`, `allow`, `etag`, `cache-control`). The same-bytes baselines (every
 * header cms-shield sends) run in the same rounds, to price cms-shield's header set. Rounds are
 * A B … B A; every ratio is taken within this run. See bench/README.md, "The `wrk` scenario".
 * @module
 */
import { join } from 'node:path'
import { writeFileSync } from 'node:fs'
import type { Baseline } from '../lib/baselines.js'
import { baselineHeaders } from '../lib/canned-response.js'
import type { BenchContext } from '../lib/context.js'
import type { LoadTarget } from '../lib/load.js'
import type { SiteInfo } from '../lib/origin-control.js'
import { check, fmtBytes, fmtInt, fmtRatio, verdict } from '../lib/report.js'
import type { Shield } from '../lib/shield.js'
import { mean, round } from '../lib/stats.js'
import type { Prepared } from '../lib/throughput-measure.js'
import { cpuPerRequestUs, runWrk, wrkAvailable, type WrkSample } from '../lib/wrk.js'
import { detailIdOf, loadBaselines, prepare } from './throughput.js'

const FASTIFY_FIVE = 'fastify, 5 headers'
const NODE_FIVE = 'node, 5 headers'
const FASTIFY_SAME = 'fastify, same bytes'
const NODE_SAME = 'node, same bytes'
const SHIELD_200 = 'cms-shield 200'
/** Bare node's 200 in the 304 row: what the same ratio is for a server that does nothing else. */
const NODE_200 = 'node, 5 headers 200'

export interface WrkTargetSummary {
  requests: number
  rps: number
  /** Sum of CPU over sum of requests, every run of the target. */
  usPerRequest: number | null
  usPerRequestPerRound: Array<number | null>
  /**
   * The least CPU per request of any one run: on a shared machine, the run least disturbed by other
   * work (which only ever adds cost: cache misses, context switches), a second reading beside the mean.
   */
  usPerRequestBest: number | null
  p99Ms: number
  serverCores: number | null
  foreignCores: number | null
  bad: number
  errors: number
}

export interface WrkRowResult {
  id: string
  path: string
  bodyBytes: number
  targets: Record<string, WrkTargetSummary>
  samples: Array<WrkSample & { round: number; order: number }>
}

function summarize(samples: Array<WrkSample & { round: number }>, rounds: number): WrkTargetSummary {
  const cpu = samples.map((sample) => sample.serverCpuS)
  const requests = samples.reduce((sum, sample) => sum + sample.requests, 0)
  const usOf = (each: typeof samples): number | null => {
    const us = cpuPerRequestUs(each)
    return Number.isFinite(us) ? round(us, 2) : null
  }
  const nullableMean = (values: Array<number | null>): number | null => (values.some((value) => value === null) ? null : round(mean(values as number[]), 3))
  return {
    requests,
    rps: round(mean(samples.map((sample) => sample.rps)), 1),
    usPerRequest: cpu.some((value) => value === null) ? null : usOf(samples),
    usPerRequestPerRound: Array.from({ length: rounds }, (_, r) => usOf(samples.filter((sample) => sample.round === r))),
    usPerRequestBest: samples.some((sample) => sample.serverCpuUsPerRequest === null) ? null : Math.min(...samples.map((sample) => sample.serverCpuUsPerRequest as number)),
    p99Ms: round(mean(samples.map((sample) => sample.p99Ms)), 2),
    serverCores: nullableMean(samples.map((sample) => sample.serverCores)),
    foreignCores: nullableMean(samples.map((sample) => sample.foreignCores)),
    bad: samples.reduce((sum, sample) => sum + sample.bad, 0),
    errors: samples.reduce((sum, sample) => sum + sample.errors, 0),
  }
}

/**
 * CPU efficiency of `subject` relative to `reference` (reference µs/req ÷ subject µs/req: reads
 * like a throughput ratio, 1.0x is equally cheap), overall and per round.
 */
export function efficiency(subject: WrkTargetSummary | undefined, reference: WrkTargetSummary | undefined): { mean: number; perRound: number[]; best: number } {
  if (!subject || !reference || subject.usPerRequest === null || reference.usPerRequest === null) return { mean: Number.NaN, perRound: [], best: Number.NaN }
  const perRound = subject.usPerRequestPerRound.map((us, r) => {
    const ref = reference.usPerRequestPerRound[r]
    return us === null || ref === null || ref === undefined ? Number.NaN : round(ref / us, 3)
  })
  const best = subject.usPerRequestBest === null || reference.usPerRequestBest === null ? Number.NaN : round(reference.usPerRequestBest / subject.usPerRequestBest, 3)
  return { mean: round(reference.usPerRequest / subject.usPerRequest, 3), perRound, best }
}

function fmtEfficiency(ratio: { mean: number; perRound: number[]; best?: number }): string {
  const finite = ratio.perRound.filter(Number.isFinite)
  const best = ratio.best === undefined || !Number.isFinite(ratio.best) ? '' : `; best runs ${fmtRatio(ratio.best)}`
  if (finite.length < 2) return `${fmtRatio(ratio.mean)}${best}`
  return `${fmtRatio(ratio.mean)} (${Math.min(...finite).toFixed(2)}–${Math.max(...finite).toFixed(2)})${best}`
}

function fmtTarget(summary: WrkTargetSummary | undefined): string {
  if (!summary) return '—'
  return `${summary.usPerRequest?.toFixed(1) ?? '?'} µs/req (best run ${summary.usPerRequestBest?.toFixed(1) ?? '?'}) · ${fmtInt(summary.rps)} req/s · p99 ${summary.p99Ms.toFixed(2)} ms`
}

async function measureRow(ctx: BenchContext, prepared: Prepared, targets: Array<{ target: LoadTarget; headers: Record<string, string> }>, harnessCpu: number | undefined): Promise<WrkRowResult> {
  const { config, recorder: { log, warn }, pacing } = ctx
  const spec = (headers: Record<string, string>, durationS: number) => ({ path: prepared.path, headers, connections: config.connections, durationS, cpu: harnessCpu })
  for (const { target, headers } of targets) if (config.warmupS > 0) await runWrk(target, spec(headers, config.warmupS))
  const order = [...targets, ...[...targets].reverse()]
  const samples: WrkRowResult['samples'] = []
  for (let r = 0; r < config.rounds; r++) {
    await pacing.quiet('wrk', `wrk ${prepared.id} round ${r + 1}`)
    for (const [i, { target, headers }] of order.entries()) {
      const sample = await runWrk(target, spec(headers, config.durationS))
      samples.push({ ...sample, round: r, order: i })
      if (sample.bad > 0 || sample.errors > 0) warn(`wrk ${prepared.id} / ${target.name}: ${sample.bad} non-2xx/3xx answers, ${sample.errors} socket errors`)
    }
    const perTarget = targets.map(({ target }) => `${target.name} ${cpuPerRequestUs(samples.filter((sample) => sample.round === r && sample.target === target.name)).toFixed(1)}`)
    log(`  wrk ${prepared.id} round ${r + 1}/${config.rounds} (µs/req): ${perTarget.join(', ')}`)
  }
  const summaries: Record<string, WrkTargetSummary> = {}
  for (const { target } of targets) summaries[target.name] = summarize(samples.filter((sample) => sample.target === target.name), config.rounds)
  return { id: prepared.id, path: prepared.path, bodyBytes: prepared.body.length, targets: summaries, samples }
}

function rowsOf(ctx: BenchContext, result: WrkRowResult, title: string): void {
  const { rows, addCheck, warn } = ctx.recorder
  const t = result.targets
  const shield = t['cms-shield']
  if (result.id === '304') {
    const vsOwn200 = efficiency(shield, t[SHIELD_200])
    const revalidation = addCheck(check('wrk 304: CPU per 200 ÷ CPU per 304', vsOwn200.mean, '>=', 1.2))
    const rate = (shield?.rps ?? Number.NaN) / (t[SHIELD_200]?.rps ?? Number.NaN)
    rows.push({
      scenario: `wrk: ${title} — 304 ÷ 200 (same detail, same rounds)`,
      shield: `${fmtTarget(shield)}; its 200: ${fmtTarget(t[SHIELD_200])}; rate ${fmtRatio(rate)}`,
      fastify: `${fmtTarget(t[FASTIFY_FIVE])}`,
      node: `${fmtTarget(t[NODE_FIVE])}; its 200: ${fmtTarget(t[NODE_200])}; its own 304 ÷ 200: ${fmtEfficiency(efficiency(t[NODE_FIVE], t[NODE_200]))}`,
      vsFastify: fmtEfficiency(efficiency(shield, t[FASTIFY_FIVE])),
      vsNode: fmtEfficiency(efficiency(shield, t[NODE_FIVE])),
      target: '≥ 1.2x the 200 (CPU per request)',
      met: `${fmtEfficiency(vsOwn200)}: ${verdict(revalidation)}`,
    })
  } else {
    const vsFastify = efficiency(shield, t[FASTIFY_FIVE])
    const vsNode = efficiency(shield, t[NODE_FIVE])
    const fastifyCheck = addCheck(check(`wrk ${result.id}: cms-shield / fastify, 5 headers (CPU per request)`, vsFastify.mean, '>=', 0.95, true))
    const nodeCheck = addCheck(check(`wrk ${result.id}: cms-shield / node, 5 headers (CPU per request)`, vsNode.mean, '>=', 0.9))
    rows.push({
      scenario: `wrk: ${title} — ${fmtBytes(result.bodyBytes)} body, CPU per request vs 5-header baselines`,
      shield: fmtTarget(shield),
      fastify: fmtTarget(t[FASTIFY_FIVE]),
      node: fmtTarget(t[NODE_FIVE]),
      vsFastify: fmtEfficiency(vsFastify),
      vsNode: fmtEfficiency(vsNode),
      target: '≥ 0.95x fastify (required); ≥ 0.9x node',
      met: `fastify: ${verdict(fastifyCheck)}; node: ${verdict(nodeCheck)}`,
    })
    rows.push({
      scenario: `wrk: ${title} — vs baselines sending cms-shield's whole header set (same bytes; prices the header set)`,
      shield: fmtTarget(shield),
      fastify: `${fmtTarget(t[FASTIFY_SAME])}; same bytes ÷ 5 headers: ${fmtEfficiency(efficiency(t[FASTIFY_SAME], t[FASTIFY_FIVE]))}`,
      node: `${fmtTarget(t[NODE_SAME])}; same bytes ÷ 5 headers: ${fmtEfficiency(efficiency(t[NODE_SAME], t[NODE_FIVE]))}`,
      vsFastify: fmtEfficiency(efficiency(shield, t[FASTIFY_SAME])),
      vsNode: fmtEfficiency(efficiency(shield, t[NODE_SAME])),
      target: '— (informational)',
      met: '—',
    })
  }
  for (const [name, summary] of Object.entries(t)) {
    if (summary.foreignCores !== null && summary.foreignCores > 0.15) {
      warn(`wrk ${result.id} / ${name}: ${summary.foreignCores.toFixed(2)} cores were busy outside the benchmark; CPU per request is the steadier figure`)
    }
  }
}

/** Runs the three wrk rows against `shield`; skipped (with how to get wrk) when wrk is missing. */
export async function wrkScenario(ctx: BenchContext, shield: Shield, site: SiteInfo, harnessCpu: number | undefined): Promise<void> {
  const { config, workDir, startBaseline } = ctx
  const { results, log, skip } = ctx.recorder
  if (!wrkAvailable()) {
    skip('wrk', 'wrk is not installed (apt-get install -y wrk)')
    return
  }
  if (ctx.schedule.spareMs('wrk') < ctx.schedule.estimateMs('wrk')) {
    skip('wrk', 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  const bodyFile = join(workDir, 'wrk-body.bin')
  writeFileSync(bodyFile, '{}')
  const start = async (kind: 'fastify' | 'node', name: string, headerSet: 'five' | 'same'): Promise<Baseline> => {
    const headersFile = join(workDir, `wrk-headers-${name.replace(/[^a-z0-9]+/g, '-')}.json`)
    writeFileSync(headersFile, JSON.stringify(baselineHeaders(headerSet, { 'content-type': 'application/json' })))
    return startBaseline(kind, bodyFile, headersFile, { name, headerSet })
  }
  const baselines = [await start('fastify', FASTIFY_FIVE, 'five'), await start('node', NODE_FIVE, 'five'), await start('fastify', FASTIFY_SAME, 'same'), await start('node', NODE_SAME, 'same')]
  const detailId = await detailIdOf(ctx, shield, site)
  // cms-shield may not have served anything yet (BENCH_ONLY=wrk): JIT and first renders first.
  await runWrk(shield, { path: `/api/v1/cms/pages/${detailId}/`, connections: config.connections, durationS: Math.max(3, config.warmupS), cpu: harnessCpu })
  const byRow: Record<string, WrkRowResult> = {}
  results.wrk = byRow
  try {
    for (const id of config.wrkRows) {
      const prepared = await prepare(ctx, id, shield, site, detailId)
      log(`wrk ${id}: ${prepared.path} (${fmtBytes(prepared.body.length)})`)
      const measured = id === '304' ? baselines.slice(0, 2) : baselines
      await loadBaselines(prepared, measured, bodyFile)
      const targets: Array<{ target: LoadTarget; headers: Record<string, string> }> = [
        { target: shield, headers: prepared.requestHeaders },
        ...(id === '304' ? [{ target: { ...shield, name: SHIELD_200 }, headers: {} }] : []),
        ...measured.map((target) => ({ target, headers: prepared.requestHeaders })),
        ...(id === '304' ? [{ target: { ...baselines[1]!, name: NODE_200 }, headers: {} }] : []),
      ]
      const result = await measureRow(ctx, prepared, targets, harnessCpu)
      byRow[id] = result
      rowsOf(ctx, result, prepared.title)
    }
  } finally {
    await Promise.all(baselines.map((baseline) => baseline.child.stop()))
  }
}
