/**
 * The throughput measurement: cms-shield and the baselines under the same closed-loop load, in
 * rounds of A B C C B A (order effects cancel out within a round), summarised per target, with
 * cms-shield's rate as a ratio of each baseline's and who set the pace (server CPU or harness).
 * See bench/README.md, "Reading the ratios".
 * @module
 */
import type { Baseline } from './baselines.js'
import { NODE_FOUR_HEADERS } from './baselines.js'
import type { BenchContext } from './context.js'
import type { ScenarioId } from './config.js'
import { harnessBound, runLoad, SERVER_BOUND_CORES } from './load.js'
import type { LoadSample, LoadTarget } from './load.js'
import { fmtInt, fmtMs, fmtRatio } from './report.js'
import type { Shield } from './shield.js'
import { mean, round } from './stats.js'

export interface Prepared {
  id: ScenarioId
  title: string
  path: string
  requestHeaders: Record<string, string>
  expectStatus: number
  /** The 200 body and headers the baselines serve (for 304: the detail's). */
  body: Buffer
  headers: Record<string, string>
  /** What cms-shield answered a matching If-None-Match with (the 304 scenario only). */
  notModifiedHeaders?: Record<string, string>
}

export interface TargetSummary {
  rps: number
  rpsPerRound: number[]
  p50: number
  p99: number
  serverCores: number | null
  serverCpuUsPerRequest: number | null
  harnessElu: number
  harnessCores: number
  foreignCores: number | null
  harnessBoundRuns: number
  runs: number
  unexpected: number
  errors: number
}

const nullableMean = (values: Array<number | null>): number | null =>
  values.some((value) => value === null) ? null : round(mean(values as number[]), 3)

export function summarizeTarget(samples: Array<LoadSample & { round: number }>, rounds: number): TargetSummary {
  const perRound: number[] = []
  for (let r = 0; r < rounds; r++) {
    const inRound = samples.filter((sample) => sample.round === r)
    if (inRound.length > 0) perRound.push(round(mean(inRound.map((sample) => sample.rps)), 1))
  }
  return {
    rps: round(mean(samples.map((sample) => sample.rps)), 1),
    rpsPerRound: perRound,
    p50: round(mean(samples.map((sample) => sample.latencyMs.p50)), 3),
    p99: round(mean(samples.map((sample) => sample.latencyMs.p99)), 3),
    serverCores: nullableMean(samples.map((sample) => sample.serverCores)),
    serverCpuUsPerRequest: nullableMean(samples.map((sample) => sample.serverCpuUsPerRequest)),
    harnessElu: round(mean(samples.map((sample) => sample.harnessElu)), 3),
    harnessCores: round(mean(samples.map((sample) => sample.harnessCores)), 3),
    foreignCores: nullableMean(samples.map((sample) => sample.foreignCores)),
    harnessBoundRuns: samples.filter(harnessBound).length,
    runs: samples.length,
    unexpected: samples.reduce((sum, sample) => sum + sample.unexpected, 0),
    errors: samples.reduce((sum, sample) => sum + sample.errors + sample.timeouts, 0),
  }
}

export interface RatioSummary {
  mean: number
  perRound: number[]
}

export function ratioOf(shield: TargetSummary, baseline: TargetSummary): RatioSummary {
  const perRound = shield.rpsPerRound.map((rps, i) => round(rps / (baseline.rpsPerRound[i] ?? Number.NaN), 3))
  return { mean: round(shield.rps / baseline.rps, 3), perRound }
}

export function fmtRatioSpread(ratio: RatioSummary | undefined): string {
  if (!ratio) return '—'
  if (ratio.perRound.length < 2) return fmtRatio(ratio.mean)
  return `${fmtRatio(ratio.mean)} (${Math.min(...ratio.perRound).toFixed(2)}–${Math.max(...ratio.perRound).toFixed(2)})`
}

export function fmtThroughput(summary: TargetSummary | undefined): string {
  if (!summary) return '—'
  return `${fmtInt(summary.rps)} req/s · p50 ${fmtMs(summary.p50)} · p99 ${fmtMs(summary.p99)}`
}

export interface ThroughputResult {
  id: ScenarioId
  title: string
  path: string
  requestHeaders: Record<string, string>
  bodyBytes: number
  shieldHeaders: Record<string, string>
  targets: Record<string, TargetSummary>
  ratios: { fastify?: RatioSummary; node?: RatioSummary; nodeFourHeaders?: RatioSummary }
  samples: Array<LoadSample & { round: number; order: number; redone: boolean }>
}

/** The name of cms-shield's 200 for the same detail, measured in the 304 scenario's own rounds. */
export const SHIELD_200 = 'cms-shield 200'

/** `extra`: other cms-shields measured in the same rounds as `shield` and the baselines (each by its own name). */
export async function measureThroughput(ctx: BenchContext, prepared: Prepared, shield: Shield, baselines: Baseline[], extra: LoadTarget[] = []): Promise<ThroughputResult> {
  const { config, recorder: { log, warn }, pacing: { quiet, measure } } = ctx
  const spec = { paths: [prepared.path], headers: prepared.requestHeaders, connections: config.connections, expectStatus: prepared.expectStatus }
  // The 304 target compares cms-shield's 304 rate with its 200 rate: both are measured in the same
  // rounds, so that the ratio does not depend on how the process or the machine changed between
  // scenarios minutes apart.
  const control = prepared.id === '304' ? [{ target: { ...shield, name: SHIELD_200 }, spec: { ...spec, headers: {}, expectStatus: 200 } }] : []
  const measured = [shield, ...extra, ...baselines].map((target) => ({ target, spec })).concat(control)
  const targets: LoadTarget[] = measured.map((each) => each.target)
  const specOf = (target: LoadTarget) => measured.find((each) => each.target === target)!.spec
  for (const target of targets) {
    if (config.warmupS > 0) await runLoad(target, { ...specOf(target), durationS: config.warmupS })
  }
  const order = [...targets, ...[...targets].reverse()]
  const samples: Array<LoadSample & { round: number; order: number; redone: boolean }> = []
  for (let r = 0; r < config.rounds; r++) {
    await quiet(prepared.id, `${prepared.id} round ${r + 1}`)
    for (const [i, target] of order.entries()) {
      const sample = await measure(prepared.id, target, { ...specOf(target), durationS: config.durationS })
      samples.push({ ...sample, round: r, order: i })
      if (sample.unexpected > 0 || sample.errors > 0 || sample.timeouts > 0) {
        warn(`${prepared.id} / ${target.name}: ${sample.unexpected} unexpected statuses ${JSON.stringify(sample.statuses)}, ${sample.errors} errors, ${sample.timeouts} timeouts`)
      }
    }
    log(`  ${prepared.id} round ${r + 1}/${config.rounds}: ${targets.map((t) => `${t.name} ${fmtInt(mean(samples.filter((s) => s.round === r && s.target === t.name).map((s) => s.rps)))}`).join(', ')} req/s`)
  }
  const summaries: Record<string, TargetSummary> = {}
  for (const target of targets) summaries[target.name] = summarizeTarget(samples.filter((sample) => sample.target === target.name), config.rounds)
  const shieldSummary = summaries['cms-shield'] as TargetSummary
  const ratios: ThroughputResult['ratios'] = {}
  if (summaries.fastify) ratios.fastify = ratioOf(shieldSummary, summaries.fastify)
  if (summaries.node) ratios.node = ratioOf(shieldSummary, summaries.node)
  if (summaries[NODE_FOUR_HEADERS]) ratios.nodeFourHeaders = ratioOf(shieldSummary, summaries[NODE_FOUR_HEADERS])
  return {
    id: prepared.id,
    title: prepared.title,
    path: prepared.path,
    requestHeaders: prepared.requestHeaders,
    bodyBytes: prepared.body.length,
    shieldHeaders: prepared.headers,
    targets: summaries,
    ratios,
    samples,
  }
}

export function harnessRows(result: ThroughputResult): string[][] {
  const shieldCost = result.targets['cms-shield']?.serverCpuUsPerRequest ?? null
  return Object.entries(result.targets).map(([name, summary]) => {
    const boundBy = summary.harnessBoundRuns * 2 > summary.runs
      ? 'harness'
      : summary.serverCores !== null && summary.serverCores >= SERVER_BOUND_CORES ? 'server CPU' : 'unclear'
    const costRatio = name === 'cms-shield' || shieldCost === null || summary.serverCpuUsPerRequest === null
      ? '—'
      : fmtRatio(summary.serverCpuUsPerRequest / shieldCost)
    return [
      result.id,
      name,
      fmtInt(summary.rps),
      summary.serverCores === null ? '—' : summary.serverCores.toFixed(2),
      summary.serverCpuUsPerRequest === null ? '—' : summary.serverCpuUsPerRequest.toFixed(1),
      costRatio,
      summary.harnessElu.toFixed(2),
      summary.harnessCores.toFixed(2),
      summary.foreignCores === null ? '—' : summary.foreignCores.toFixed(2),
      boundBy,
    ]
  })
}
