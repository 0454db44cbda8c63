/**
 * The throughput scenarios, `detail`, `seed`, `304`, `readthrough` and `list`: one request,
 * answered from memory by cms-shield, against a bare Fastify route and a bare `node:http` server
 * sending the same bytes (the `detail` row adds bare node with four headers, `304` cms-shield's
 * own 200 for the same detail). The baselines are started once per call and reloaded per row.
 * See bench/README.md, "Scenarios" and "Reading the ratios".
 * @module
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Baseline } from '../lib/baselines.js'
import { NODE_FOUR_HEADERS } from '../lib/baselines.js'
import { baselineHeaders } from '../lib/canned-response.js'
import type { ScenarioId } from '../lib/config.js'
import type { BenchContext } from '../lib/context.js'
import { call, metricSum } from '../lib/http.js'
import { FOREIGN_LOAD_CORES, runLoad } from '../lib/load.js'
import type { SiteInfo } from '../lib/origin-control.js'
import { check, fmtBytes, fmtInt, fmtRatio, verdict } from '../lib/report.js'
import { shieldMetrics, type Shield } from '../lib/shield.js'
import { spread } from '../lib/stats.js'
import { fmtRatioSpread, fmtThroughput, harnessRows, measureThroughput, ratioOf, SHIELD_200, type TargetSummary } from '../lib/throughput-measure.js'
import type { Prepared, ThroughputResult } from '../lib/throughput-measure.js'

/** What the throughput scenarios keep between the runner's two calls (the list rows run last). */
export interface ThroughputState {
  /** Each row's result by scenario; `results.throughput` in the JSON. */
  byId: Record<string, ThroughputResult>
  shieldWarmedUp: boolean
}

/** Picks the detail whose body is the median size of a few, so the detail row is not a RedirectPage stub. */
async function pickDetailId(shield: Shield, site: SiteInfo): Promise<number> {
  const step = Math.max(1, Math.floor(site.sampleIds.length / 15))
  const candidates = site.sampleIds.filter((_, i) => i % step === 0).slice(0, 15)
  const sized: Array<{ id: number; bytes: number }> = []
  for (const id of candidates) {
    const response = await call(`${shield.origin}/api/v1/cms/pages/${id}/`)
    if (response.status === 200) sized.push({ id, bytes: response.body.length })
  }
  sized.sort((a, b) => a.bytes - b.bytes)
  const median = sized[Math.floor(sized.length / 2)]
  if (!median) throw new Error('no detail answered 200')
  return median.id
}

function headerRecord(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {}
  headers.forEach((value, name) => {
    record[name] = value
  })
  return record
}

export async function prepare(ctx: BenchContext, id: ScenarioId, shield: Shield, site: SiteInfo, detailId: number): Promise<Prepared> {
  const { warn } = ctx.recorder
  const detailPath = `/api/v1/cms/pages/${detailId}/`
  const spec: Record<string, { title: string; path: string }> = {
    detail: { title: 'detail hit', path: detailPath },
    seed: { title: `seed list (child_of=${site.rootId}&show_in_menus=true&limit=250)`, path: `/api/v1/cms/pages/?child_of=${site.rootId}&show_in_menus=true&limit=250` },
    list: { title: 'default list (/pages/, limit 20)', path: '/api/v1/cms/pages/' },
    readthrough: { title: 'read-through hit (search=)', path: '/api/v1/cms/pages/?search=dental' },
    '304': { title: '304 revalidation (detail, If-None-Match)', path: detailPath },
  }
  const chosen = spec[id]
  if (!chosen) throw new Error(`not a throughput scenario: ${id}`)
  let response = await call(`${shield.origin}${chosen.path}`)
  if (id === 'readthrough') response = await call(`${shield.origin}${chosen.path}`) // the first was the miss
  if (response.status !== 200) throw new Error(`${chosen.path}: cms-shield answered ${response.status}`)
  const headers = headerRecord(response.headers)
  const prepared: Prepared = { id, title: chosen.title, path: chosen.path, requestHeaders: {}, expectStatus: 200, body: response.body, headers }
  if (id === 'readthrough' && !/\bhit\b/.test(headers['cache-status'] ?? '')) {
    warn(`read-through: the second answer was not a hit (Cache-Status: ${headers['cache-status'] ?? 'none'})`)
  }
  if (id === '304') {
    const etag = headers.etag
    if (etag === undefined) throw new Error('the detail has no ETag')
    prepared.requestHeaders = { 'if-none-match': etag }
    prepared.expectStatus = 304
    const revalidated = await call(`${shield.origin}${chosen.path}`, { headers: prepared.requestHeaders })
    if (revalidated.status !== 304) throw new Error(`If-None-Match: cms-shield answered ${revalidated.status}, not 304`)
    prepared.notModifiedHeaders = headerRecord(revalidated.headers)
  }
  return prepared
}

export async function loadBaselines(prepared: Prepared, baselines: Baseline[], bodyFile: string): Promise<void> {
  writeFileSync(bodyFile, prepared.body)
  for (const baseline of baselines) {
    writeFileSync(baseline.headersFile, JSON.stringify(baselineHeaders(baseline.headerSet, prepared.headers, prepared.notModifiedHeaders)))
  }
  const reloaded = baselines.map((baseline) => baseline.child.waitForLine(/ reloaded bytes=(\d+)/, 10_000))
  for (const baseline of baselines) baseline.child.signal('SIGHUP')
  await Promise.all(reloaded)
  // Each baseline must now serve what cms-shield serves for this request.
  for (const baseline of baselines) {
    const response = await call(`${baseline.origin}${prepared.path}`, { headers: prepared.requestHeaders })
    if (response.status !== prepared.expectStatus) throw new Error(`${baseline.name}: status ${response.status}, expected ${prepared.expectStatus}`)
    if (prepared.expectStatus === 200 && !response.body.equals(prepared.body)) throw new Error(`${baseline.name}: body differs from cms-shield's`)
  }
}

function throughputRow(ctx: BenchContext, result: ThroughputResult): void {
  const { rows, addCheck, warn } = ctx.recorder
  const shieldSummary = result.targets['cms-shield']
  const ratioF = result.ratios.fastify
  const ratioN = result.ratios.node
  let target = '— (informational)'
  let met = '—'
  if (result.id === 'detail' || result.id === 'seed') {
    const fastifyCheck = addCheck(check(`${result.id}: cms-shield / fastify`, ratioF?.mean ?? Number.NaN, '>=', 0.95, true))
    const nodeCheck = addCheck(check(`${result.id}: cms-shield / node`, ratioN?.mean ?? Number.NaN, '>=', 0.9))
    target = '≥ 0.95x fastify (required); ≥ 0.9x node'
    met = `fastify: ${verdict(fastifyCheck)}; node: ${verdict(nodeCheck)}`
  }
  rows.push({
    scenario: `${result.title} — ${fmtBytes(result.bodyBytes)} body`,
    shield: fmtThroughput(shieldSummary),
    fastify: fmtThroughput(result.targets.fastify),
    node: fmtThroughput(result.targets.node),
    vsFastify: fmtRatioSpread(ratioF),
    vsNode: fmtRatioSpread(ratioN),
    target,
    met,
  })
  const fourHeaders = result.targets[NODE_FOUR_HEADERS]
  if (fourHeaders && result.targets.node) {
    // Same rounds, same body: bare node with cms-shield's whole header set against bare node with four of them.
    const headerCost = result.targets.node.rps / fourHeaders.rps
    rows.push({
      scenario: `${result.title}: vs bare node sending only content-type, etag, cache-control and vary (what cms-shield's header set costs)`,
      shield: `${fmtRatioSpread(result.ratios.nodeFourHeaders)} of the four-header node's rate`,
      fastify: '—',
      node: `${fmtThroughput(fourHeaders)}; bare node with cms-shield's headers ÷ with four: ${fmtRatio(headerCost)}`,
      vsFastify: '—',
      vsNode: fmtRatioSpread(result.ratios.nodeFourHeaders),
      target: '— (informational)',
      met: '—',
    })
  }
  for (const [name, summary] of Object.entries(result.targets)) {
    if (summary.harnessBoundRuns * 2 > summary.runs) {
      warn(
        `${result.id} / ${name}: the harness was saturated (event loop ${summary.harnessElu.toFixed(2)} busy) while the server used ` +
          `${summary.serverCores?.toFixed(2) ?? '?'} cores: this rate is a lower bound; compare server µs/req instead`,
      )
    }
    if (summary.foreignCores !== null && summary.foreignCores > FOREIGN_LOAD_CORES) {
      warn(`${result.id} / ${name}: ${summary.foreignCores.toFixed(2)} cores were busy outside the benchmark during these runs; the numbers are noisy`)
    }
  }
  const rates = result.targets['cms-shield']?.rpsPerRound ?? []
  if (rates.length > 1 && spread(rates) > 0.1) warn(`${result.id}: cms-shield's rate varied ${(spread(rates) * 100).toFixed(0)}% between rounds`)
}

/** Runs `ids` (in that order) against `shield`, each row only if it fits before the deadline. */
export async function throughputScenario(ctx: BenchContext, state: ThroughputState, ids: readonly ScenarioId[], shield: Shield, site: SiteInfo): Promise<void> {
  if (ids.length === 0) return
  const { config, workDir, startBaseline } = ctx
  const { results, harness, log, skip } = ctx.recorder
  const { spareMs, estimateThroughputMs } = ctx.schedule
  const bodyFile = join(workDir, 'body.bin')
  const headersFile = join(workDir, 'headers.json')
  writeFileSync(bodyFile, '{}')
  writeFileSync(headersFile, JSON.stringify(baselineHeaders(config.baselineHeaders, { 'content-type': 'application/json' })))
  const baselines = [await startBaseline('fastify', bodyFile, headersFile), await startBaseline('node', bodyFile, headersFile)]
  if (config.baselineHeaders === 'same' && ids.includes('detail')) {
    const fourHeadersFile = join(workDir, 'headers-four.json')
    writeFileSync(fourHeadersFile, JSON.stringify(baselineHeaders('minimal', { 'content-type': 'application/json' })))
    baselines.push(await startBaseline('node', bodyFile, fourHeadersFile, { name: NODE_FOUR_HEADERS, headerSet: 'minimal' }))
  }
  const detailId = await detailIdOf(ctx, shield, site)
  const publicShield = config.publicApis && ids.includes('detail') ? await startPublicShield(ctx, detailId) : undefined
  if (!state.shieldWarmedUp) {
    // cms-shield starts cold (JIT, first renders); give it a longer first warm-up than the scenarios'.
    await runLoad(shield, { paths: [`/api/v1/cms/pages/${detailId}/`], connections: config.connections, durationS: Math.max(3, config.warmupS), expectStatus: 200 })
    state.shieldWarmedUp = true
  }
  results.harness = harness
  results.throughput = state.byId
  for (const id of ids) {
    const prepared = await prepare(ctx, id, shield, site, detailId)
    const extra = id === 'detail' && publicShield ? [publicShield] : []
    if (spareMs(id) < estimateThroughputMs((id === 'detail' && baselines.length > 2 ? 4 : 3) + extra.length)) {
      skip(prepared.title, 'not enough time left before BENCH_MAX_SECONDS')
      continue
    }
    log(`${prepared.title}: ${prepared.path} (${fmtBytes(prepared.body.length)})`)
    // The four-header baseline only in the detail row: it prices the header set, which every row shares.
    const measuredBaselines = baselines.filter((baseline) => id === 'detail' || baseline.name !== NODE_FOUR_HEADERS)
    await loadBaselines(prepared, measuredBaselines, bodyFile)
    const result = await measureThroughput(ctx, prepared, shield, measuredBaselines, extra)
    state.byId[id] = result
    throughputRow(ctx, result)
    if (extra.length > 0) publicApisRow(ctx, result)
    harness.push(...harnessRows(result))
    if (id === '304') revalidationRow(ctx, result, state.byId.detail)
  }
  await Promise.all([...baselines, ...(publicShield ? [publicShield] : [])].map((each) => each.child.stop()))
}

/** The detail row's target with every non-public hook on its public path (`BENCH_PUBLIC_APIS=on`). */
export const PUBLIC_APIS_SHIELD = 'cms-shield (PRIVATE_APIS=false)'

/** A second cms-shield with PRIVATE_APIS=false, checked to have taken the public paths, warmed up. */
async function startPublicShield(ctx: BenchContext, detailId: number): Promise<Shield> {
  const { config, recorder: { log } } = ctx
  log(`${PUBLIC_APIS_SHIELD}: starting a second cms-shield for the detail row`)
  const started = await ctx.startShield('cms-shield-public-apis', 'warn', 60_000, { PRIVATE_APIS: 'false' })
  const metrics = await shieldMetrics(started)
  if (metricSum(metrics, 'cms_shield_private_api', { api: 'preparedHeaders', path: 'public' }) !== 1) {
    await started.child.stop()
    throw new Error(`${PUBLIC_APIS_SHIELD} did not report the public header path in /metrics`)
  }
  await runLoad(started, { paths: [`/api/v1/cms/pages/${detailId}/`], connections: config.connections, durationS: Math.max(3, config.warmupS), expectStatus: 200 })
  return { ...started, name: PUBLIC_APIS_SHIELD }
}

const fmtSigned = (value: number): string => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)}`

/** The hit path on public APIs only, against the same baselines and the private path, in the same rounds. */
function publicApisRow(ctx: BenchContext, result: ThroughputResult): void {
  const { rows } = ctx.recorder
  const summary = result.targets[PUBLIC_APIS_SHIELD]
  const privatePath = result.targets['cms-shield']
  if (!summary || !privatePath) return
  const ratio = (baseline: TargetSummary | undefined) => (baseline ? ratioOf(summary, baseline) : undefined)
  const cost = summary.serverCpuUsPerRequest !== null && privatePath.serverCpuUsPerRequest !== null
    ? `; ${fmtSigned(summary.serverCpuUsPerRequest - privatePath.serverCpuUsPerRequest)} µs of server CPU per request (${summary.serverCpuUsPerRequest.toFixed(1)} against ${privatePath.serverCpuUsPerRequest.toFixed(1)})` : ''
  rows.push({
    scenario: `${result.title}, PRIVATE_APIS=false (public paths) — same rounds and baselines`,
    shield: `${fmtThroughput(summary)} = ${fmtRatioSpread(ratioOf(summary, privatePath))} of the private paths (${fmtInt(privatePath.rps)} req/s)${cost}`,
    fastify: fmtThroughput(result.targets.fastify),
    node: fmtThroughput(result.targets.node),
    vsFastify: fmtRatioSpread(ratio(result.targets.fastify)),
    vsNode: fmtRatioSpread(ratio(result.targets.node)),
    target: '— (cost of the public paths)',
    met: '—',
  })
}

/** The 304 row's second row: cms-shield's 304 rate over its 200 rate in the same rounds; the baselines' from the detail row. */
function revalidationRow(ctx: BenchContext, result: ThroughputResult, detail: ThroughputResult | undefined): void {
  const { rows, addCheck } = ctx.recorder
  const rate304 = result.targets['cms-shield']?.rps ?? Number.NaN
  const rate200 = result.targets[SHIELD_200]?.rps ?? Number.NaN
  const revalidation = addCheck(check('304 rate / 200 rate', rate304 / rate200, '>=', 1.2))
  const baselineRatio = (name: 'fastify' | 'node'): string => {
    const r304 = result.targets[name]?.rps
    const r200 = detail?.targets[name]?.rps
    return r304 !== undefined && r200 !== undefined ? `own 304/200: ${fmtRatio(r304 / r200)}` : '—'
  }
  rows.push({
    scenario: '304 rate ÷ 200 rate (same detail, 200s measured in the same rounds)',
    shield: `${fmtRatio(rate304 / rate200)} (${fmtInt(rate304)} vs ${fmtInt(rate200)} req/s)`,
    fastify: baselineRatio('fastify'),
    node: baselineRatio('node'),
    vsFastify: '—',
    vsNode: '—',
    target: '≥ 1.2x',
    met: verdict(revalidation),
  })
}

/** The detail every detail-based row requests, picked once per run (`results.detailId`). */
export async function detailIdOf(ctx: BenchContext, shield: Shield, site: SiteInfo): Promise<number> {
  const { results } = ctx.recorder
  if (typeof results.detailId !== 'number') results.detailId = await pickDetailId(shield, site)
  return results.detailId as number
}
