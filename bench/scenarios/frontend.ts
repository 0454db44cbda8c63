/**
 * `frontend`: a website's build, as one client with cms-shield's default settings sees it (issue
 * 35). A fake CMS of the scenario's own serves the `BENCH_PAGES` site, once in one language and
 * once with WAGTAIL_I18N_ENABLED and a German translation; a fresh cms-shield syncs it, and the
 * build's queries (`lib/frontend-mix.ts`, derived from the site; in two languages, each asked again
 * with `&locale=de`) go out `BENCH_FRONTEND_CONCURRENCY` at a time from one address. The build
 * must get no 429 and cause no CMS request (counted at the fake CMS, by shape:
 * `lib/request-shape.ts`); its p99 and wall time are reported. Then the same queries, at random
 * under load, against the plain listing `?limit=20` in rounds of mix, listing, listing, mix give
 * the mix's CPU per request against a snapshot listing's, both from `/proc` as the `wrk` rows
 * measure it (wrk when installed, else autocannon). See bench/README.md, scenario `frontend`.
 * @module
 */
import { buildQueries } from '../lib/frontend-mix.js'
import { runBuild, type BuildRun } from '../lib/build-client.js'
import type { BenchContext } from '../lib/context.js'
import { getJson, metricSum } from '../lib/http.js'
import { originStructure, resetHits, startOrigin, type Origin } from '../lib/origin-control.js'
import type { CpuPinning } from '../lib/processes.js'
import { check, fmtInt, fmtMs, fmtRatio, verdict } from '../lib/report.js'
import { READ_THROUGH_SHAPES, type RequestShape } from '../lib/request-shape.js'
import { shieldMetrics, type Shield } from '../lib/shield.js'
import { round } from '../lib/stats.js'
import type { LoadTarget } from '../lib/load.js'
import { runWrk, wrkAvailable } from '../lib/wrk.js'

const PAGES = '/api/v1/cms/pages/'
/** The baseline: a plain listing from the snapshot, the list row's request. */
const LISTING = `${PAGES}?limit=20`

interface Site {
  readonly name: string
  /** The languages of the site, the default first; the build asks each after the first again with `&locale=`. */
  readonly locales: readonly string[]
}

const SITES: readonly Site[] = [
  { name: 'one language', locales: [] },
  { name: 'two languages', locales: ['en', 'de'] },
]

/** The CMS requests a client caused since the last reset: every shape but the sync's. */
async function causedRequests(origin: Origin): Promise<number> {
  const { shapes } = await getJson<{ shapes: Partial<Record<RequestShape, number>> }>(`${origin.control}/hits`)
  return READ_THROUGH_SHAPES.reduce((sum, shape) => sum + (shapes[shape] ?? 0), 0)
}

const readThrough = async (shield: Shield): Promise<number> => metricSum(await shieldMetrics(shield), 'cms_shield_cms_requests_total', { class: 'read_through' })

interface CpuCompare {
  /** CPU µs per request: the build's queries at random, and the plain listing. */
  readonly mixUs: number
  readonly listingUs: number
  readonly tool: 'wrk' | 'autocannon'
  readonly samples: readonly unknown[]
}

/** Rounds of mix, listing, listing, mix; sums of CPU over sums of requests per target. */
async function cpuPerRequest(ctx: BenchContext, shield: Shield, paths: readonly string[], harnessCpu: number | undefined): Promise<CpuCompare> {
  const { config, pacing } = ctx
  const mix: LoadTarget = { ...shield, name: 'build mix' }
  const listing: LoadTarget = { ...shield, name: 'plain listing' }
  const useWrk = wrkAvailable()
  const run = async (target: LoadTarget, durationS: number) => {
    const targetPaths = target === mix ? paths : [LISTING]
    if (useWrk) {
      const sample = await runWrk(target, { path: targetPaths, connections: config.connections, durationS, cpu: harnessCpu })
      return { target: target.name, requests: sample.requests, cpuS: sample.serverCpuS, sample }
    }
    const sample = await pacing.measure('frontend', target, { paths: targetPaths, connections: config.connections, durationS, expectStatus: 200 })
    return { target: target.name, requests: sample.requests, cpuS: sample.serverCpuUsPerRequest === null ? null : (sample.serverCpuUsPerRequest * sample.requests) / 1e6, sample }
  }
  for (const target of [mix, listing]) await run(target, Math.max(1, config.warmupS))
  const measured: Array<Awaited<ReturnType<typeof run>>> = []
  for (let r = 0; r < config.rounds; r++) {
    await pacing.quiet('frontend', 'frontend')
    for (const target of [mix, listing, listing, mix]) measured.push(await run(target, config.durationS))
  }
  const usOf = (name: string): number => {
    const own = measured.filter((each) => each.target === name)
    const cpu = own.reduce((sum, each) => sum + (each.cpuS ?? Number.NaN), 0)
    const requests = own.reduce((sum, each) => sum + each.requests, 0)
    return requests === 0 ? Number.NaN : (cpu * 1e6) / requests
  }
  return { mixUs: usOf(mix.name), listingUs: usOf(listing.name), tool: useWrk ? 'wrk' : 'autocannon', samples: measured.map((each) => each.sample) }
}

function statusText(build: BuildRun): string {
  return Object.entries(build.statuses).sort(([a], [b]) => Number(a) - Number(b)).map(([status, count]) => `${fmtInt(count)} × ${status}`).join(', ')
}

async function oneSite(ctx: BenchContext, pinning: CpuPinning | undefined, site: Site): Promise<void> {
  const { config, recorder } = ctx
  const { log } = recorder
  const origin = await startOrigin(config.pages, pinning, site.locales)
  let shield: Shield | undefined
  try {
    shield = await ctx.startShield(`cms-shield-frontend-${site.locales.length > 1 ? 'i18n' : 'plain'}`, 'warn', 120_000, {}, origin)
    const structure = await originStructure(origin)
    const paths = [buildQueries(structure, PAGES), ...site.locales.slice(1).map((locale) => buildQueries(structure, PAGES, locale))].flat()
    log(`frontend, ${site.name}: ${fmtInt(structure.pages.length)} pages, a build of ${fmtInt(paths.length)} queries, ${config.frontendConcurrency} at a time from one client`)
    await resetHits(origin)
    const readBefore = await readThrough(shield)
    await ctx.pacing.quiet('frontend', 'frontend build')
    const build = await runBuild(shield.origin, paths, config.frontendConcurrency)
    const caused = await causedRequests(origin)
    const shieldCaused = (await readThrough(shield)) - readBefore
    const refused = build.statuses['429'] ?? 0
    log(`  build: ${statusText(build)} in ${fmtMs(build.wallMs, 0)}, p99 ${fmtMs(build.latency.p99)}; CMS requests caused: ${caused} (cms-shield's own count ${shieldCaused})`)
    const cpu = await cpuPerRequest(ctx, shield, paths, pinning?.harness)
    const duringRounds = await causedRequests(origin)
    const title = `site build (frontend), ${site.name}: ${fmtInt(paths.length)} queries, one client, default settings`
    const no429 = recorder.addCheck(check(`frontend ${site.name}: answers 429`, refused, '==', 0, true))
    const noCms = recorder.addCheck(check(`frontend ${site.name}: CMS requests the build caused`, caused, '==', 0, true))
    const answered = recorder.addCheck(check(`frontend ${site.name}: requests without an answer`, build.failed, '==', 0, true))
    recorder.results[`frontend${site.locales.length > 1 ? 'I18n' : ''}`] = {
      pages: structure.pages.length, queries: paths.length, concurrency: config.frontendConcurrency, statuses: build.statuses, cacheStatus: build.cacheStatus,
      latencyMs: build.latency, wallMs: round(build.wallMs, 1), failed: build.failed, failures: build.failures,
      cmsRequestsCaused: caused, cmsRequestsShieldCounted: shieldCaused, cmsRequestsDuringCpuRounds: duringRounds - caused,
      cpu: { tool: cpu.tool, mixUsPerRequest: round(cpu.mixUs, 2), listingUsPerRequest: round(cpu.listingUs, 2), samples: cpu.samples },
    }
    recorder.rows.push({
      scenario: title,
      shield: `${statusText(build)}; ${caused} CMS requests; p99 ${fmtMs(build.latency.p99)}, whole build ${fmtMs(build.wallMs, 0)}; ` +
        `CPU per request ${cpu.mixUs.toFixed(1)} µs vs ${cpu.listingUs.toFixed(1)} µs for \`?limit=20\` (${fmtRatio(cpu.mixUs / cpu.listingUs)}, ${cpu.tool})`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: '0 × 429, 0 CMS requests',
      met: [no429, noCms, answered].every((each) => each.met) ? 'yes' : [no429, noCms, answered].filter((each) => !each.met).map(verdict).join(', '),
    })
  } finally {
    await shield?.child.stop()
    await origin.child.stop()
  }
}

export async function frontendScenario(ctx: BenchContext, pinning: CpuPinning | undefined): Promise<void> {
  for (const site of SITES) await oneSite(ctx, pinning, site)
}
