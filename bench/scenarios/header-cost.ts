/**
 * The `headers` scenario: what each optional header of a hit costs cms-shield. Six cms-shields, one
 * per header configuration (every optional header; without `Cache-Tag`; without either purge-key
 * header; without `Cache-Status`; without the request id on hits; with none of them), serve the same
 * detail hit under wrk, in A B … B A rounds; a header's cost is the difference in CPU time per
 * request between two of them in the same run. See bench/README.md, "The `headers` scenario".
 * @module
 */
import type { BenchContext } from '../lib/context.js'
import { fmtInt } from '../lib/report.js'
import type { Shield } from '../lib/shield.js'
import { round } from '../lib/stats.js'
import { cpuPerRequestUs, runWrk, wrkAvailable, type WrkSample } from '../lib/wrk.js'

const ALL = { CACHE_TAG_HEADERS: 'surrogate-key,cache-tag', CACHE_STATUS_HEADER: 'true', REQUEST_ID_ON_HITS: 'true' }

/** Each variant's name and its environment. */
export const HEADER_VARIANTS: ReadonlyArray<{ name: string; env: Record<string, string> }> = [
  { name: 'every optional header', env: ALL },
  { name: 'no cache-tag', env: { ...ALL, CACHE_TAG_HEADERS: 'surrogate-key' } },
  { name: 'no purge keys', env: { ...ALL, CACHE_TAG_HEADERS: 'none' } },
  { name: 'no cache-status', env: { ...ALL, CACHE_STATUS_HEADER: 'false' } },
  { name: 'no request id on hits', env: { ...ALL, REQUEST_ID_ON_HITS: 'false' } },
  { name: 'none of them', env: { CACHE_TAG_HEADERS: 'none', CACHE_STATUS_HEADER: 'false', REQUEST_ID_ON_HITS: 'false' } },
]

/** Which header each comparison prices: the first variant's µs/req minus the second's. */
const COSTS: ReadonlyArray<[header: string, withIt: string, without: string]> = [
  ['Cache-Tag (beside Surrogate-Key)', 'every optional header', 'no cache-tag'],
  ['Surrogate-Key (the only purge-key header)', 'no cache-tag', 'no purge keys'],
  ['Cache-Status', 'every optional header', 'no cache-status'],
  ['X-Request-Id on hits (generated)', 'every optional header', 'no request id on hits'],
  ['all four', 'every optional header', 'none of them'],
]

export async function headerCostScenario(ctx: BenchContext, detailId: number, harnessCpu: number | undefined): Promise<void> {
  const { config, recorder: { rows, results, log, skip }, pacing } = ctx
  if (!wrkAvailable()) {
    skip('headers', 'wrk is not installed (apt-get install -y wrk)')
    return
  }
  const path = `/api/v1/cms/pages/${detailId}/`
  const shields: Shield[] = []
  try {
    for (const variant of HEADER_VARIANTS) {
      const shield = await ctx.startShield(`cms-shield ${variant.name}`, 'warn', 60_000, variant.env)
      shields.push({ ...shield, name: variant.name })
    }
    const spec = (durationS: number) => ({ path, connections: config.connections, durationS, cpu: harnessCpu })
    for (const shield of shields) await runWrk(shield, spec(Math.max(3, config.warmupS)))
    const order = [...shields, ...[...shields].reverse()]
    const samples: Array<WrkSample & { round: number }> = []
    for (let r = 0; r < config.rounds; r++) {
      await pacing.quiet('headers', `headers round ${r + 1}`)
      for (const shield of order) samples.push({ ...(await runWrk(shield, spec(config.durationS))), round: r })
      log(`  headers round ${r + 1}/${config.rounds}: ${shields.map((s) => `${s.name} ${cpuPerRequestUs(samples.filter((x) => x.round === r && x.target === s.name)).toFixed(2)}`).join(', ')} µs/req`)
    }
    const us: Record<string, number> = {}
    const perRound: Record<string, number[]> = {}
    for (const shield of shields) {
      us[shield.name] = round(cpuPerRequestUs(samples.filter((sample) => sample.target === shield.name)), 2)
      perRound[shield.name] = Array.from({ length: config.rounds }, (_, r) => cpuPerRequestUs(samples.filter((sample) => sample.round === r && sample.target === shield.name)))
    }
    const costs = COSTS.map(([header, withIt, without]) => {
      const rounds = (perRound[withIt] ?? []).map((value, r) => round(value - (perRound[without]?.[r] ?? Number.NaN), 2))
      return { header, usPerRequest: round((us[withIt] ?? Number.NaN) - (us[without] ?? Number.NaN), 2), perRound: rounds, share: round(((us[withIt] ?? 0) - (us[without] ?? 0)) / (us[withIt] ?? Number.NaN), 4) }
    })
    results.headerCost = { path, usPerRequest: us, perRound, costs, samples }
    for (const cost of costs) {
      rows.push({
        scenario: `wrk: what ${cost.header} costs a detail hit`,
        shield: `${cost.usPerRequest.toFixed(2)} µs/req (${(cost.share * 100).toFixed(1)}%; rounds ${cost.perRound.map((value) => value.toFixed(2)).join(', ')})`,
        fastify: '—',
        node: '—',
        vsFastify: '—',
        vsNode: '—',
        target: '— (informational)',
        met: '—',
      })
    }
    log(`headers: ${shields.map((s) => `${s.name} ${us[s.name]?.toFixed(2)} µs/req (${fmtInt(samples.filter((x) => x.target === s.name).reduce((sum, x) => sum + x.requests, 0))} requests)`).join('; ')}`)
  } finally {
    await Promise.all(shields.map((shield) => shield.child.stop()))
  }
}
