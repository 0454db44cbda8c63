/**
 * `npm run bench`: measures cms-shield (the built `dist/main.js`) against two baselines that answer
 * with the same bytes — a bare Fastify route and a bare `node:http` server — plus the cold-key,
 * sync and memory scenarios, then prints a markdown table and writes `bench/results/latest.json`.
 *
 * Every process is its own: the fake Wagtail (`bench/origin.ts`), cms-shield, and each baseline;
 * the load generator (autocannon, pipelining 1) runs here, in a process that does nothing else
 * heavy while it measures. Everything listens on 127.0.0.1. Every wait has a bound, the whole run
 * has a deadline (BENCH_MAX_SECONDS), and every child is killed on every way out.
 *
 * See bench/README.md for the scenarios, the variables and how to read the ratios.
 * @module
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { call, freePort, getJson, GiveUp, hasMetric, metricSum, parseMetrics, postJson, sleep, waitFor } from './lib/http.js'
import type { MetricSample } from './lib/http.js'
import { FOREIGN_LOAD_CORES, harnessBound, runLoad, SERVER_BOUND_CORES, waitForQuiet } from './lib/load.js'
import type { LoadSample, LoadSpec, LoadTarget } from './lib/load.js'
import { machineInfo } from './lib/machine.js'
import { SocketClients, type BurstAnswer } from './lib/socket-burst.js'
import { baselineHeaders, type BaselineHeaderSet } from './lib/canned-response.js'
import { BenchChild, cpuPinning, killAllChildrenNow, pinSelf, processMemory, stopAllChildren } from './lib/processes.js'
import { check, fmtBytes, fmtInt, fmtMs, fmtRatio, markdownTable, renderRows, verdict } from './lib/report.js'
import type { Check, Row } from './lib/report.js'
import { mean, round, spread, summarize } from './lib/stats.js'
import { floodEstimateMs, floodScenario } from './scenarios/flood.js'

// ---------------------------------------------------------------------------------------------
// Configuration

const SCENARIOS = ['detail', 'seed', 'list', 'readthrough', '304', 'logging', 'cold', 'sync', 'large', 'flood'] as const
type ScenarioId = (typeof SCENARIOS)[number]

function envNumber(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min || value > max) {
    process.stderr.write(`bench: ${name}=${JSON.stringify(raw)}: expected a number from ${min} to ${max}\n`)
    process.exit(2)
  }
  return value
}

/** `BENCH_SHIELD_ENV="FAST_PATH=false RENDER_CACHE_MAX_BYTES=1mb"`: extra variables for every cms-shield started. */
function envShieldExtras(): Record<string, string> {
  const raw = process.env.BENCH_SHIELD_ENV?.trim()
  const extras: Record<string, string> = {}
  if (raw === undefined || raw === '') return extras
  for (const pair of raw.split(/[\s,]+/).filter((part) => part !== '')) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair)
    if (!match) {
      process.stderr.write(`bench: BENCH_SHIELD_ENV: ${JSON.stringify(pair)} is not NAME=value\n`)
      process.exit(2)
    }
    extras[match[1] as string] = match[2] as string
  }
  return extras
}

function envScenarios(): Set<ScenarioId> {
  const raw = process.env.BENCH_ONLY?.trim()
  if (raw === undefined || raw === '') return new Set(SCENARIOS)
  const chosen = new Set<ScenarioId>()
  for (const name of raw.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      process.stderr.write(`bench: BENCH_ONLY: unknown scenario ${JSON.stringify(name)}; known: ${SCENARIOS.join(', ')}\n`)
      process.exit(2)
    }
    chosen.add(name as ScenarioId)
  }
  return chosen
}

function envPin(): 'auto' | 'off' {
  const raw = process.env.BENCH_PIN?.trim() || 'auto'
  if (raw !== 'auto' && raw !== 'off') {
    process.stderr.write(`bench: BENCH_PIN=${JSON.stringify(raw)}: expected auto or off\n`)
    process.exit(2)
  }
  return raw
}

function envBaselineHeaders(): BaselineHeaderSet {
  const raw = process.env.BENCH_BASELINE_HEADERS?.trim() || 'same'
  if (raw !== 'minimal' && raw !== 'same') {
    process.stderr.write(`bench: BENCH_BASELINE_HEADERS=${JSON.stringify(raw)}: expected minimal or same\n`)
    process.exit(2)
  }
  return raw
}

const config = {
  durationS: envNumber('BENCH_DURATION', 5, 1, 600),
  rounds: Math.round(envNumber('BENCH_ROUNDS', 3, 1, 50)),
  warmupS: envNumber('BENCH_WARMUP', 1, 0, 60),
  connections: Math.round(envNumber('BENCH_CONNECTIONS', 64, 1, 1_000)),
  maxSeconds: envNumber('BENCH_MAX_SECONDS', 600, 10, 86_400),
  pages: Math.round(envNumber('BENCH_PAGES', 1_000, 2, 1_000_000)),
  syncPages: Math.round(envNumber('BENCH_SYNC_PAGES', 10_000, 2, 1_000_000)),
  syncLatencyMs: Math.round(envNumber('BENCH_SYNC_LATENCY_MS', 20, 0, 10_000)),
  largePages: Math.round(envNumber('BENCH_PAGES_LARGE', 100_000, 2, 1_000_000)),
  coldClients: Math.round(envNumber('BENCH_COLD_CLIENTS', 200, 1, 2_000)),
  coldDelayMs: Math.round(envNumber('BENCH_COLD_DELAY_MS', 250, 0, 10_000)),
  swapIntervalMs: Math.round(envNumber('BENCH_SWAP_INTERVAL_MS', 500, 50, 60_000)),
  flood: {
    seconds: envNumber('BENCH_FLOOD_SECONDS', 30, 2, 600),
    concurrency: Math.round(envNumber('BENCH_FLOOD_CONCURRENCY', 200, 1, 2_000)),
    readers: Math.round(envNumber('BENCH_FLOOD_READERS', 8, 1, 256)),
    latencyMs: Math.round(envNumber('BENCH_FLOOD_LATENCY_MS', 100, 0, 10_000)),
    timeoutMs: Math.round(envNumber('BENCH_FLOOD_TIMEOUT_MS', 5_000, 100, 60_000)),
  },
  quietWaitS: envNumber('BENCH_QUIET_WAIT', 20, 0, 600),
  only: envScenarios(),
  shieldEnv: envShieldExtras(),
  baselineHeaders: envBaselineHeaders(),
  pin: envPin(),
  out: process.env.BENCH_OUT?.trim() || join('bench', 'results', 'latest.json'),
}

/** The fake Wagtail's largest page size (WAGTAILAPI_LIMIT_MAX), which the sync walks the listing with. */
const ORIGIN_PAGE_SIZE = 250
/** cms-shield's default SYNC_CONCURRENCY: the benchmark leaves it at its default. */
const SYNC_CONCURRENCY = 8
/** "1 GB" of the target, in bytes. */
const MEMORY_TARGET_BYTES = 1_000_000_000
const SHIELD_ENTRY = join('dist', 'main.js')

const startedAt = Date.now()
const deadline = startedAt + config.maxSeconds * 1000
const remainingMs = (): number => deadline - Date.now()
const elapsedS = (): string => ((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)

function log(message: string): void {
  process.stdout.write(`[${elapsedS()}s] ${message}\n`)
}

const warnings: string[] = []
function warn(message: string): void {
  warnings.push(message)
  process.stdout.write(`[${elapsedS()}s] WARNING: ${message}\n`)
}

const selected = (id: ScenarioId): boolean => config.only.has(id)

/** The order the scenarios run in: the ones with targets first, the informational list rows last. */
const PLAN: readonly ScenarioId[] = ['detail', 'seed', '304', 'logging', 'cold', 'sync', 'large', 'readthrough', 'list', 'flood']
/**
 * Which scenario keeps its time when not all fit before the deadline, most important first: the
 * required rows, then the cheap rows with targets, then 304 (long, with a target), then the rest.
 */
const PRIORITY: readonly ScenarioId[] = ['detail', 'seed', 'cold', 'sync', 'large', '304', 'logging', 'readthrough', 'list', 'flood']

/** `targets`: cms-shield and the baselines (4 in the detail row with the four-header baseline). */
function estimateThroughputMs(targets = 3): number {
  return (targets * config.warmupS + config.rounds * 2 * targets * (config.durationS + 0.3)) * 1000 + 3_000
}

/** A rough budget per scenario, so that one running late leaves time for the ones after it. */
function estimateMs(id: ScenarioId): number {
  switch (id) {
    case 'logging':
      return (Math.max(3, config.warmupS) + config.warmupS + 4 * (config.durationS + 0.3)) * 1000 + 10_000
    case 'cold':
      return config.rounds * (2 * config.coldDelayMs + 400) + 10_000
    case 'sync':
      return 1.5 * idealSyncS() * 1000 + 25_000
    case 'flood':
      return floodEstimateMs(config.flood)
    case 'large':
      return 140_000 * (config.largePages / 100_000) + 30_000 + (2 * (config.durationS + 0.3) + Math.max(2, config.warmupS)) * 1000
    default:
      return estimateThroughputMs()
  }
}

/** Time left for `id` once the more important scenarios that run after it have their budgets. */
function spareMs(id: ScenarioId): number {
  const rank = PRIORITY.indexOf(id)
  const later = PLAN.slice(PLAN.indexOf(id) + 1).filter((each) => selected(each) && PRIORITY.indexOf(each) < rank)
  return remainingMs() - later.reduce((sum, each) => sum + estimateMs(each), 0)
}

function idealSyncS(): number {
  const listingPages = Math.ceil(config.syncPages / ORIGIN_PAGE_SIZE)
  return ((config.syncPages / SYNC_CONCURRENCY + listingPages) * config.syncLatencyMs) / 1000
}

// ---------------------------------------------------------------------------------------------
// Results

const rows: Row[] = []
const checks: Check[] = []
const results: Record<string, unknown> = {}
const skipped: Array<{ scenario: string; reason: string }> = []

function addCheck(result: Check): Check {
  checks.push(result)
  return result
}

function skip(scenario: string, reason: string): void {
  skipped.push({ scenario, reason })
  warn(`${scenario}: skipped (${reason})`)
  rows.push({ scenario, shield: `skipped: ${reason}`, fastify: '—', node: '—', vsFastify: '—', vsNode: '—', target: '—', met: '—' })
}

const machine = machineInfo(startedAt)
/** CPU 0 for the harness and the fake CMS, the other for the server being measured (undefined: unpinned). */
const pinning = cpuPinning(config.pin, Number(machine.cpus))

let reported = false
function report(status: 'complete' | 'incomplete', reason?: string): void {
  if (reported) return
  reported = true
  const lines: string[] = []
  lines.push('')
  lines.push(`## cms-shield benchmark (${status}${reason ? `: ${reason}` : ''})`)
  lines.push('')
  lines.push(
    `${String(machine.cpus)} × ${String(machine.cpuModel)}, node ${process.version}, ${String(machine.date)}; ` +
      `${config.durationS}s runs, ${config.rounds} round(s) of A B C C B A, ${config.connections} connections, pipelining 1; ` +
      `site of ${fmtInt(config.pages)} pages for the throughput rows.`,
  )
  lines.push(
    pinning
      ? `Pinned (BENCH_PIN=auto): the harness and the fake CMS on CPU ${pinning.harness}, each measured server on CPU ${pinning.server}.`
      : 'Not pinned (BENCH_PIN=off, or no taskset or a single CPU): the scheduler places every process.',
  )
  lines.push(
    config.baselineHeaders === 'minimal'
      ? 'The baselines send the body with content-type, etag, cache-control and vary (BENCH_BASELINE_HEADERS=minimal): cms-shield\'s other headers count against it.'
      : 'The baselines send the same bytes as cms-shield: the body with every header it sent, its request id as a fixed value of the same length (BENCH_BASELINE_HEADERS=same, the default). ' +
        `The detail row also runs bare node with only content-type, etag, cache-control and vary ("${NODE_FOUR_HEADERS}"), which prices that header set.`,
  )
  const git = machine.git as { commit: string; srcDiffersFromCommit: boolean } | null
  lines.push(
    'cms-shield runs with LOG_LEVEL=warn, so its per-request log line is off in every row but the LOG_LEVEL=info one; ' +
      'CACHE_TTL=24h, so read-through hits stay hits for the whole run' +
      `${Object.keys(config.shieldEnv).length > 0 ? `; extra cms-shield variables: ${Object.entries(config.shieldEnv).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}.` +
      `${git ? ` Commit ${git.commit.slice(0, 12)}${git.srcDiffersFromCommit ? ' with uncommitted changes in src/' : ''}.` : ''}`,
  )
  lines.push('')
  lines.push(renderRows(rows))
  const harness = results.harness as string[][] | undefined
  if (harness && harness.length > 0) {
    lines.push('')
    lines.push('Who set the pace (means over the runs): server CPU in cores and µs of server CPU per request; harness = this process (autocannon).')
    lines.push('')
    lines.push(markdownTable(['scenario', 'target', 'req/s', 'server cores', 'server µs/req', 'CPU-cost ratio vs shield', 'harness ELU', 'harness cores', 'foreign cores', 'bound by'], harness))
  }
  if (warnings.length > 0) {
    lines.push('')
    lines.push('Warnings:')
    for (const warning of warnings) lines.push(`- ${warning}`)
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  const json = {
    status,
    reason: reason ?? null,
    machine,
    config: { ...config, only: [...config.only] },
    pinning: pinning ?? null,
    elapsedSeconds: round((Date.now() - startedAt) / 1000, 1),
    rows,
    checks,
    skipped,
    warnings,
    results,
  }
  try {
    mkdirSync(join(config.out, '..'), { recursive: true })
    writeFileSync(config.out, `${JSON.stringify(json, null, 2)}\n`)
    process.stdout.write(`\nwrote ${config.out}\n`)
  } catch (error) {
    process.stderr.write(`bench: could not write ${config.out}: ${error instanceof Error ? error.message : String(error)}\n`)
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

let workDir: string | undefined

interface Origin {
  child: BenchChild
  api: string
  control: string
}

async function startOrigin(pages: number): Promise<Origin> {
  const child = new BenchChild('origin', ['--import', 'tsx', join('bench', 'origin.ts')], {
    env: { BENCH_ORIGIN_PAGES: String(pages), BENCH_ORIGIN_LATENCY_MS: '0' },
    ...(pinning ? { cpu: pinning.harness } : {}),
  })
  const match = await child.waitForLine(/^bench-origin ready api=(\S+) control=(\S+)/, 60_000)
  return { child, api: match[1] as string, control: match[2] as string }
}

interface Hits {
  total: number
  list: number
  detail: number
  find: number
  other: number
}

const originHits = (origin: Origin): Promise<Hits> => getJson<Hits>(`${origin.control}/hits`)
const resetHits = (origin: Origin): Promise<Hits> => postJson<Hits>(`${origin.control}/hits/reset`, {})
const setLatency = (origin: Origin, ms: number): Promise<unknown> => postJson(`${origin.control}/latency`, { ms })

interface SiteInfo {
  pages: number
  rootId: number
  sampleIds: number[]
  generatedMs?: number
}

interface Shield extends LoadTarget {
  child: BenchChild
  token: string
  logFile: string
  /** From spawn to the first /readyz 200. */
  readyAfterMs: number
}

/** `env`: variables of this scenario's own (BENCH_SHIELD_ENV still wins). */
async function startShield(label: string, origin: Origin, logLevel: 'warn' | 'info', readyTimeoutMs: number, env: Record<string, string> = {}): Promise<Shield> {
  if (workDir === undefined) throw new Error('no work directory')
  const port = await freePort()
  const token = randomBytes(24).toString('hex')
  const logFile = join(workDir, `${label.replace(/[^a-z0-9]+/gi, '-')}.log`)
  const url = `http://127.0.0.1:${port}`
  const spawnedAt = performance.now()
  const child = new BenchChild(label, [SHIELD_ENTRY], {
    env: {
      UPSTREAM_URL: origin.api,
      BASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: logLevel,
      SYNC_INTERVAL: '24h',
      FULL_SYNC_INTERVAL: '168h',
      REFRESH_TOKEN: token,
      CACHE_TTL: '24h',
      ...env,
      ...config.shieldEnv,
    },
    stdoutFile: logFile,
    ...(pinning ? { cpu: pinning.server } : {}),
  })
  await waitFor(`${label} /readyz 200`, readyTimeoutMs, 50, async () => {
    if (!child.alive) throw new GiveUp(`${label} exited before it was ready:\n${child.output()}`)
    const response = await call(`${url}/readyz`, { timeoutMs: 2_000 })
    return response.status === 200 ? true : undefined
  })
  return { name: 'cms-shield', origin: url, pid: child.pid, child, token, logFile, readyAfterMs: performance.now() - spawnedAt }
}

/** What the helpers below need of a cms-shield: where it listens. */
type ShieldAddress = Pick<Shield, 'origin'>

async function shieldMetrics(shield: ShieldAddress): Promise<MetricSample[]> {
  const response = await call(`${shield.origin}/metrics`, { timeoutMs: 10_000 })
  if (response.status !== 200) throw new Error(`/metrics: ${response.status}`)
  return parseMetrics(response.body.toString('utf8'))
}

interface ReadyBody {
  snapshot?: { version?: number; pages?: number }
  sync?: { running?: boolean; lastMode?: string; lastError?: unknown }
}

/**
 * Waits until no sync runs and none has started for a second (a PURGE's refresh waits out
 * REFRESH_DEBOUNCE before it counts as running, so "not running" alone is not enough).
 */
async function shieldIdle(shield: ShieldAddress, timeoutMs: number): Promise<void> {
  let quietSince: number | undefined
  let lastRuns = Number.NaN
  await waitFor('cms-shield sync idle', timeoutMs, 200, async () => {
    const ready = await getJson<ReadyBody>(`${shield.origin}/readyz`)
    const runs = metricSum(await shieldMetrics(shield), 'cms_shield_sync_runs_total')
    if (ready.sync?.running !== false || runs !== lastRuns) {
      lastRuns = runs
      quietSince = undefined
      return undefined
    }
    quietSince ??= Date.now()
    return Date.now() - quietSince >= 1_000 ? true : undefined
  })
}

/** Runs `trigger`, then waits until cms-shield has finished one more sync than before. */
async function afterOneSync(shield: ShieldAddress, timeoutMs: number, trigger: () => Promise<void>): Promise<number> {
  const runs = (samples: MetricSample[]): number => metricSum(samples, 'cms_shield_sync_runs_total')
  const before = runs(await shieldMetrics(shield))
  const started = performance.now()
  await trigger()
  await waitFor('a sync to finish', timeoutMs, 50, async () => (runs(await shieldMetrics(shield)) > before ? true : undefined))
  return performance.now() - started
}

interface Baseline extends LoadTarget {
  child: BenchChild
  /** Which of cms-shield's headers it sends, and the file it reads them from. */
  headerSet: BaselineHeaderSet
  headersFile: string
}

/**
 * The detail row's third baseline when the others send cms-shield's whole header set: bare node
 * with only the four headers any cache sends, so the run also shows what that header set costs.
 */
const NODE_FOUR_HEADERS = 'node, 4 headers'

/** `holdMs` (node only): answer a burst together, that long after its first request (the cold-key ideal). */
async function startBaseline(
  kind: 'fastify' | 'node',
  bodyFile: string,
  headersFile: string,
  { holdMs = 0, name = kind, headerSet = config.baselineHeaders }: { holdMs?: number; name?: string; headerSet?: BaselineHeaderSet } = {},
): Promise<Baseline> {
  const child = new BenchChild(`baseline-${name.replace(/[^a-z0-9]+/g, '-')}`, ['--import', 'tsx', join('bench', `baseline-${kind}.ts`)], {
    env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS_FILE: headersFile, BENCH_HOLD_MS: String(holdMs) },
    ...(pinning ? { cpu: pinning.server } : {}),
  })
  const match = await child.waitForLine(/ ready url=(\S+)/, 30_000)
  return { name, origin: match[1] as string, pid: child.pid, child, headerSet, headersFile }
}

// ---------------------------------------------------------------------------------------------
// Throughput scenarios: cms-shield against both baselines, A B C C B A per round

interface Prepared {
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

interface TargetSummary {
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

function summarizeTarget(samples: Array<LoadSample & { round: number }>, rounds: number): TargetSummary {
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

interface RatioSummary {
  mean: number
  perRound: number[]
}

function ratioOf(shield: TargetSummary, baseline: TargetSummary): RatioSummary {
  const perRound = shield.rpsPerRound.map((rps, i) => round(rps / (baseline.rpsPerRound[i] ?? Number.NaN), 3))
  return { mean: round(shield.rps / baseline.rps, 3), perRound }
}

function fmtRatioSpread(ratio: RatioSummary | undefined): string {
  if (!ratio) return '—'
  if (ratio.perRound.length < 2) return fmtRatio(ratio.mean)
  return `${fmtRatio(ratio.mean)} (${Math.min(...ratio.perRound).toFixed(2)}–${Math.max(...ratio.perRound).toFixed(2)})`
}

function fmtThroughput(summary: TargetSummary | undefined): string {
  if (!summary) return '—'
  return `${fmtInt(summary.rps)} req/s · p50 ${fmtMs(summary.p50)} · p99 ${fmtMs(summary.p99)}`
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

async function prepare(id: ScenarioId, shield: Shield, site: SiteInfo, detailId: number): Promise<Prepared> {
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

async function loadBaselines(prepared: Prepared, baselines: Baseline[], bodyFile: string): Promise<void> {
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

interface ThroughputResult {
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

/** Load from outside the benchmark past which a run is measured again (once), after waiting for quiet. */
const FOREIGN_REDO_CORES = 0.25

/** Waits (bounded by BENCH_QUIET_WAIT and the time `id` has) until the machine is quiet; says so when it was not. */
async function quiet(id: ScenarioId, label: string): Promise<void> {
  const maxMs = Math.min(config.quietWaitS * 1000, Math.max(0, spareMs(id) - estimateMs(id)))
  if (maxMs <= 0) return
  const started = Date.now()
  const foreign = await waitForQuiet(maxMs)
  const waited = Date.now() - started
  if (foreign !== null && foreign >= FOREIGN_LOAD_CORES) log(`  ${label}: ${foreign.toFixed(2)} cores still busy outside the benchmark after waiting ${(waited / 1000).toFixed(0)} s; going on`)
  else if (waited > 1_500) log(`  ${label}: waited ${(waited / 1000).toFixed(0)} s for other processes to quieten`)
}

/** One run; measured again (once) when something outside the benchmark took CPU during it. */
async function measure(id: ScenarioId, target: LoadTarget, spec: LoadSpec): Promise<LoadSample & { redone: boolean }> {
  const first = await runLoad(target, spec)
  if (first.foreignCores === null || first.foreignCores <= FOREIGN_REDO_CORES || config.quietWaitS === 0) return { ...first, redone: false }
  if (spareMs(id) - estimateMs(id) < (spec.durationS + config.quietWaitS) * 1000) return { ...first, redone: false }
  log(`  ${id} / ${target.name}: ${first.foreignCores.toFixed(2)} cores busy outside the benchmark; measuring again`)
  await quiet(id, `${id} / ${target.name}`)
  const second = await runLoad(target, spec)
  return (second.foreignCores ?? 0) < first.foreignCores ? { ...second, redone: true } : { ...first, redone: true }
}

/** The name of cms-shield's 200 for the same detail, measured in the 304 scenario's own rounds. */
const SHIELD_200 = 'cms-shield 200'

async function measureThroughput(prepared: Prepared, shield: Shield, baselines: Baseline[]): Promise<ThroughputResult> {
  const spec = { paths: [prepared.path], headers: prepared.requestHeaders, connections: config.connections, expectStatus: prepared.expectStatus }
  // The 304 target compares cms-shield's 304 rate with its 200 rate: both are measured in the same
  // rounds, so that the ratio does not depend on how the process or the machine changed between
  // scenarios minutes apart.
  const control = prepared.id === '304' ? [{ target: { ...shield, name: SHIELD_200 }, spec: { ...spec, headers: {}, expectStatus: 200 } }] : []
  const measured = [shield, ...baselines].map((target) => ({ target, spec })).concat(control)
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

function harnessRows(result: ThroughputResult): string[][] {
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

function throughputRow(result: ThroughputResult): void {
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

// ---------------------------------------------------------------------------------------------
// Phases

const throughput: Record<string, ThroughputResult> = {}
const harness: string[][] = []
let shieldWarmedUp = false

async function throughputPhase(ids: readonly ScenarioId[], shield: Shield, site: SiteInfo): Promise<void> {
  if (ids.length === 0) return
  if (workDir === undefined) throw new Error('no work directory')
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
  const detailId = await detailIdOf(shield, site)
  if (!shieldWarmedUp) {
    // cms-shield starts cold (JIT, first renders); give it a longer first warm-up than the scenarios'.
    await runLoad(shield, { paths: [`/api/v1/cms/pages/${detailId}/`], connections: config.connections, durationS: Math.max(3, config.warmupS), expectStatus: 200 })
    shieldWarmedUp = true
  }
  results.harness = harness
  results.throughput = throughput
  for (const id of ids) {
    const prepared = await prepare(id, shield, site, detailId)
    if (spareMs(id) < estimateThroughputMs(id === 'detail' && baselines.length > 2 ? 4 : 3)) {
      skip(prepared.title, 'not enough time left before BENCH_MAX_SECONDS')
      continue
    }
    log(`${prepared.title}: ${prepared.path} (${fmtBytes(prepared.body.length)})`)
    // The four-header baseline only in the detail row: it prices the header set, which every row shares.
    const measuredBaselines = baselines.filter((baseline) => id === 'detail' || baseline.name !== NODE_FOUR_HEADERS)
    await loadBaselines(prepared, measuredBaselines, bodyFile)
    const result = await measureThroughput(prepared, shield, measuredBaselines)
    throughput[id] = result
    throughputRow(result)
    harness.push(...harnessRows(result))
    const detail = throughput.detail
    if (id === '304') {
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
  }
  await Promise.all(baselines.map((baseline) => baseline.child.stop()))
}

async function detailIdOf(shield: Shield, site: SiteInfo): Promise<number> {
  if (typeof results.detailId !== 'number') results.detailId = await pickDetailId(shield, site)
  return results.detailId as number
}

async function loggingPhase(origin: Origin, warnShield: Shield, detailId: number): Promise<void> {
  const title = 'detail hit, LOG_LEVEL=info (one request log line each)'
  const warnDetail = throughput.detail
  if (spareMs('logging') < estimateMs('logging')) {
    skip(title, 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  log(`${title}: starting a second cms-shield with LOG_LEVEL=info (its log goes to a file)`)
  const infoShield = await startShield('cms-shield-info', origin, 'info', 60_000)
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

/** Untimed bursts on fresh keys before the cold-key rounds (bounded to 5 s). */
const COLD_WARM_BURSTS = 30

async function coldPhase(origin: Origin, shield: Shield): Promise<void> {
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
  if (lastAnswer && workDir !== undefined && spareMs('cold') > 20_000) {
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

async function syncPhase(origin: Origin): Promise<void> {
  const n = config.syncPages
  const title = `full sync: ${fmtInt(n)} pages, ${config.syncLatencyMs} ms origin latency, SYNC_CONCURRENCY ${SYNC_CONCURRENCY}`
  const listingPages = Math.ceil(n / ORIGIN_PAGE_SIZE)
  const idealS = idealSyncS()
  if (spareMs('sync') < idealS * 1000 + 20_000) {
    skip(title, 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  const site = await postJson<SiteInfo>(`${origin.control}/site`, { pages: n })
  await setLatency(origin, config.syncLatencyMs)
  await quiet('sync', 'sync')
  await resetHits(origin)
  log(`${title}: starting a fresh cms-shield (ideal ${idealS.toFixed(1)} s)`)
  const shield = await startShield('cms-shield-sync', origin, 'warn', Math.min(remainingMs() - 20_000, Math.max(60_000, idealS * 10_000)))
  try {
    const metrics = await shieldMetrics(shield)
    const syncS = metricSum(metrics, 'cms_shield_sync_duration_seconds_sum')
    const fullHits = await originHits(origin)
    const timeCheck = addCheck(check('full sync / ideal', syncS / idealS, '<=', 1.2))
    results.sync = { pages: site.pages, idealS, syncS, readyAfterMs: round(shield.readyAfterMs, 0), cmsRequests: fullHits }
    rows.push({
      scenario: `${title}: time`,
      shield: `sync ${syncS.toFixed(2)} s (ready ${(shield.readyAfterMs / 1000).toFixed(2)} s after spawn); ideal ${idealS.toFixed(2)} s = N·latency/concurrency + ${listingPages} listing pages → ${fmtRatio(syncS / idealS)}`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: '≤ 1.2x ideal',
      met: verdict(timeCheck),
    })
    rows.push({
      scenario: `${title}: CMS requests`,
      shield: `${fmtInt(fullHits.total)} (${fmtInt(fullHits.detail)} detail, ${fullHits.list} list, ${fullHits.find} find, ${fullHits.other} other)`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: `— (${fmtInt(n)} details + ${listingPages} listing pages + probes)`,
      met: '—',
    })

    await shieldIdle(shield, 30_000)
    const bound = listingPages + 2
    await resetHits(origin)
    const purgeMs = await afterOneSync(shield, 60_000, async () => {
      const response = await call(`${shield.origin}/nowhere/`, { method: 'PURGE' })
      if (response.status !== 200) throw new Error(`PURGE /nowhere/: ${response.status} ${response.body.toString('utf8')}`)
    })
    await sleep(200)
    const resyncHits = await originHits(origin)
    const resyncCheck = addCheck(check('no-change resync: CMS requests', resyncHits.total, '<=', bound))

    await shieldIdle(shield, 30_000)
    await resetHits(origin)
    const oneId = site.sampleIds[Math.floor(site.sampleIds.length / 2)] as number
    const webhookMs = await afterOneSync(shield, 60_000, async () => {
      const response = await call(`${shield.origin}/-/refresh`, {
        method: 'POST',
        headers: { authorization: `Bearer ${shield.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ids: [oneId] }),
      })
      if (response.status !== 202) throw new Error(`POST /-/refresh: ${response.status} ${response.body.toString('utf8')}`)
    })
    await sleep(200)
    const webhookHits = await originHits(origin)
    const webhookCheck = addCheck(check('webhook one id: CMS requests less the one detail', webhookHits.total - 1, '<=', bound))
    results.resync = { purge: { cmsRequests: resyncHits, ms: round(purgeMs, 0) }, webhook: { id: oneId, cmsRequests: webhookHits, ms: round(webhookMs, 0) }, bound }
    rows.push({
      scenario: `no-change resync of ${fmtInt(n)} pages (PURGE /nowhere/): CMS requests`,
      shield: `${resyncHits.total} (${resyncHits.list} list, ${resyncHits.detail} detail) in ${(purgeMs / 1000).toFixed(2)} s`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: `≤ ceil(N/${ORIGIN_PAGE_SIZE}) + 2 = ${bound}`,
      met: verdict(resyncCheck),
    })
    rows.push({
      scenario: `no-change resync via webhook {"ids":[${oneId}]}: CMS requests − 1 detail`,
      shield: `${webhookHits.total - 1} (${webhookHits.list} list, ${webhookHits.detail} detail) in ${(webhookMs / 1000).toFixed(2)} s`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: `≤ ${bound}`,
      met: verdict(webhookCheck),
    })
  } finally {
    await shield.child.stop()
    await setLatency(origin, 0).catch(() => undefined)
  }
}

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

async function largePhase(origin: Origin): Promise<void> {
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
  const shield = await startShield('cms-shield-large', origin, 'warn', Math.max(10_000, readyBudget))
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
    const spec = { paths, connections: config.connections, expectStatus: 200 }
    await runLoad(shield, { ...spec, durationS: Math.max(2, config.warmupS) })
    // A swap run must hold a few swaps: at this size one listing pass can take longer than BENCH_DURATION.
    const swapDurationS = Math.min(30, Math.max(config.durationS, Math.ceil((2.5 * Math.max(resyncMs, editToSwapMs)) / 1000)))
    const metricsNow = async (): Promise<MetricSample[]> => shieldMetrics(shield)
    type LargeRun = LoadSample & { mode: 'steady' | 'swap'; swaps: number; purges: number; editErrors: number; loopLagMaxMs: number; shed: number }
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
    const steady = runs.filter((run) => run.mode === 'steady')
    const swapping = runs.filter((run) => run.mode === 'swap')
    harness.push(...harnessRows(largeResult('large steady', steady)), ...harnessRows(largeResult('large swapping', swapping)))
    const steadyP99 = mean(steady.map((run) => run.latencyMs.p99))
    const swapP99 = mean(swapping.map((run) => run.latencyMs.p99))
    const swaps = swapping.reduce((sum, run) => sum + run.swaps, 0)
    const purges = swapping.reduce((sum, run) => sum + run.purges, 0)
    const shed = runs.reduce((sum, run) => sum + run.shed, 0)
    const swapMax = Math.max(...swapping.map((run) => run.latencyMs.max))
    const swapLag = Math.max(...swapping.map((run) => run.loopLagMaxMs))
    const steadyLag = Math.max(...steady.map((run) => run.loopLagMaxMs))
    const swapCheck = addCheck(check(`${title}: p99 during swaps / steady`, swapP99 / steadyP99, '<=', 2))
    if (swaps === 0) warn(`${title}: no snapshot was swapped in during the swap runs (${purges} PURGEs sent)`)
    if (shed > 0) warn(`${title}: cms-shield shed ${shed} requests with 503 (event loop lag up to ${swapLag.toFixed(0)} ms during swaps)`)
    const unexpected = runs.reduce((sum, run) => sum + run.unexpected + run.errors + run.timeouts, 0) - shed
    if (unexpected > 0) warn(`${title}: ${unexpected} detail requests failed or were answered neither 200 nor 503 during the steady/swap runs`)
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
      snapshotVersion: metricSum(await metricsNow(), 'cms_shield_snapshot_version'),
      peakRssAfterSwaps: processMemory(shield.pid)?.peakRss ?? null,
      runs,
    }
    rows.push({
      scenario: `${title}: detail p99 while snapshots swap (edit + PURGE every ${config.swapIntervalMs} ms) vs steady`,
      shield:
        `p99 ${fmtMs(swapP99)} vs ${fmtMs(steadyP99)} steady = ${fmtRatio(swapP99 / steadyP99)}; ` +
        `${fmtInt(mean(swapping.map((run) => run.rps)))} vs ${fmtInt(mean(steady.map((run) => run.rps)))} req/s; ` +
        `${swaps} swaps from ${purges} PURGEs in ${swapping.length * swapDurationS} s; max latency ${fmtMs(swapMax, 0)}, ` +
        `event-loop lag up to ${swapLag.toFixed(0)} ms (steady ${steadyLag.toFixed(0)} ms); ${fmtInt(shed)} answers were 503 (load shedding); ` +
        `peak RSS ${fmtBytes(processMemory(shield.pid)?.peakRss)}`,
      fastify: '—',
      node: '—',
      vsFastify: '—',
      vsNode: '—',
      target: '≤ 2x steady p99',
      met: `${verdict(swapCheck)} on p99${shed > 0 || swapMax > 20 * steadyP99 ? `, but max ${fmtMs(swapMax, 0)}${shed > 0 ? ` and ${fmtInt(shed)} × 503` : ''}` : ''}`,
    })
  } finally {
    await shield.child.stop()
  }
}

/** The flood scenario lives in scenarios/flood.ts; it gets this run's processes, waits and report. */
async function floodPhase(origin: Origin): Promise<void> {
  if (spareMs('flood') < estimateMs('flood')) {
    skip('flood', 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  await floodScenario({
    settings: { ...config.flood, shieldEnv: config.shieldEnv, harnessCpu: pinning?.harness },
    origin,
    startShield: (label, env) => startShield(label, origin, 'warn', 60_000, env),
    shieldMetrics,
    shieldIdle,
    afterOneSync,
    addCheck,
    rows,
    results,
    waitQuiet: (label) => quiet('flood', label),
    log,
    warn,
  })
}

// ---------------------------------------------------------------------------------------------
// Main, with every way out stopping the children

async function cleanupAndExit(code: number, status: 'complete' | 'incomplete', reason?: string): Promise<never> {
  report(status, reason)
  await stopAllChildren(2_000).catch(() => undefined)
  if (workDir !== undefined) {
    if (status === 'complete') rmSync(workDir, { recursive: true, force: true })
    else process.stdout.write(`kept ${workDir} (cms-shield's logs) for a look\n`)
  }
  process.exit(code)
}

process.on('exit', () => killAllChildrenNow())
process.once('SIGINT', () => void cleanupAndExit(130, 'incomplete', 'interrupted (SIGINT)'))
process.once('SIGTERM', () => void cleanupAndExit(143, 'incomplete', 'terminated (SIGTERM)'))
process.on('unhandledRejection', (error) => void cleanupAndExit(1, 'incomplete', `unhandled rejection: ${error instanceof Error ? error.message : String(error)}`))
const deadlineTimer = setTimeout(() => {
  void cleanupAndExit(1, 'incomplete', `BENCH_MAX_SECONDS=${config.maxSeconds} reached`)
}, config.maxSeconds * 1000)

async function main(): Promise<void> {
  if (!existsSync(SHIELD_ENTRY)) throw new Error(`${SHIELD_ENTRY} is missing: run \`npm run build\` first (\`npm run bench\` does)`)
  workDir = mkdtempSync(join(tmpdir(), 'cms-shield-bench-'))
  if (pinning) pinSelf(pinning.harness)
  log(`cms-shield benchmark: ${[...config.only].join(', ')}; deadline ${config.maxSeconds} s; work directory ${workDir}`)
  log('cms-shield runs with LOG_LEVEL=warn: request logging is off except in the LOG_LEVEL=info row')
  const origin = await startOrigin(config.pages)
  log(`origin: api ${origin.api}, control ${origin.control}`)

  const first = (['detail', 'seed', '304'] as const).filter(selected)
  const last = (['readthrough', 'list'] as const).filter(selected)
  // One cms-shield serves the throughput, logging and cold-key rows; it stays up (idle, never
  // syncing again) while the sync and large-site rows run their own, and the origin gets the same
  // site back before the last rows.
  let shield: Shield | undefined
  let site: SiteInfo | undefined
  if ([...first, ...last, 'logging', 'cold'].some((id) => selected(id as ScenarioId))) {
    site = await getJson<SiteInfo>(`${origin.control}/info`)
    shield = await startShield('cms-shield', origin, 'warn', 60_000)
    log(`cms-shield ready after ${shield.readyAfterMs.toFixed(0)} ms at ${shield.origin} (${fmtInt(site.pages)} pages)`)
    const metrics = await shieldMetrics(shield)
    for (const name of ['cms_shield_sync_duration_seconds_sum', 'cms_shield_sync_runs_total', 'cms_shield_process_resident_memory_bytes', 'cms_shield_nodejs_heap_size_used_bytes', 'cms_shield_snapshot_version']) {
      if (!hasMetric(metrics, name)) warn(`/metrics has no ${name}; the rows that read it will be wrong`)
    }
    await throughputPhase(first, shield, site)
    if (selected('logging')) await loggingPhase(origin, shield, await detailIdOf(shield, site))
    if (selected('cold')) await coldPhase(origin, shield)
  }
  if (selected('sync')) await syncPhase(origin)
  if (selected('large')) await largePhase(origin)
  if ((selected('sync') || selected('large')) && (last.length > 0 || selected('flood'))) {
    const restored = await postJson<SiteInfo>(`${origin.control}/site`, { pages: config.pages }, 120_000)
    if (site && restored.pages !== site.pages) throw new Error('the origin did not get the throughput site back')
  }
  if (shield && site && last.length > 0) await throughputPhase(last, shield, site)
  await shield?.child.stop()
  if (selected('flood')) await floodPhase(origin)
  await origin.child.stop()
}

main().then(
  () => {
    clearTimeout(deadlineTimer)
    void cleanupAndExit(0, 'complete')
  },
  (error: unknown) => {
    clearTimeout(deadlineTimer)
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error)
    process.stderr.write(`bench: ${message}\n`)
    void cleanupAndExit(1, 'incomplete', error instanceof Error ? error.message.split('\n')[0] : String(error))
  },
)
