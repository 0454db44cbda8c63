/**
 * `BENCH_ONLY=flood`: one client floods cms-shield with distinct read-through queries while
 * well-behaved clients go on. What it shows is whether the read-through budget protects the CMS
 * (few CMS requests, 429/503 with Retry-After, no hang) without hurting anyone else: documented
 * endpoints as fast as without the flood, a legitimate client's own misses still reaching the CMS,
 * and edits (a PURGE, a listing pass) served as soon as without the flood.
 *
 * It runs a quiet phase (readers and edits alone) and then two flood phases (the same, plus the
 * flood and one legitimate search a second; the flooding client first at the harness's priority,
 * then at nice 19 so that it yields the harness's core to the measured readers), each
 * BENCH_FLOOD_SECONDS long, against a fresh
 * cms-shield with the budget passed explicitly, so the bound on CMS requests is known.
 * See bench/README.md, scenario `flood`.
 * @module
 */
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { BenchChild, machineBusySeconds, processCpuSeconds, runningChildren } from '../lib/processes.js'
import { call, getJson, postJson, sleep, waitFor } from '../lib/http.js'
import type { MetricSample } from '../lib/http.js'
import { READ_THROUGH_SHAPES } from '../lib/request-shape.js'
import type { RequestShape } from '../lib/request-shape.js'
import type { FloodReport } from '../lib/flood-queries.js'
import { check, fmtInt, fmtMs, fmtRatio, verdict } from '../lib/report.js'
import type { Check, Row } from '../lib/report.js'
import { LatencyRecorder, round } from '../lib/stats.js'
import type { LatencySummary } from '../lib/stats.js'

/**
 * The budget cms-shield gets, explicitly (these are its documented defaults), so that the bound
 * on CMS requests does not depend on defaults changing. BENCH_SHIELD_ENV may override any of them;
 * the bound is computed from what was actually passed.
 */
export const FLOOD_SHIELD_ENV: Readonly<Record<string, string>> = {
  READ_THROUGH_RATE: '10',
  READ_THROUGH_BURST: '20',
  READ_THROUGH_CONCURRENCY: '4',
  READ_THROUGH_CLIENT_RATE: '2',
  READ_THROUGH_CLIENT_BURST: '10',
  READ_THROUGH_QUEUE_TIMEOUT: '500ms',
}

/**
 * Every client comes from its own loopback address (all of 127.0.0.0/8 is loopback on Linux), so
 * that cms-shield, with no TRUST_PROXY, tells them apart by their socket address as it tells
 * clients apart behind no proxy. The orchestrator's own calls (PURGE, metrics) use 127.0.0.1.
 */
const FLOODER_ADDRESS = '127.0.0.2'
const READER_ADDRESS = '127.0.0.3'
const LEGIT_ADDRESS = '127.0.0.4'

/** Documented endpoints p99 under the flood, edits under the flood: at most this times the quiet phase. */
const MAX_SLOWDOWN = 1.5
/** Distinct queries the flood must send for its row to count. */
const MIN_FLOOD_QUERIES = 10_000
/** Share of the legitimate client's searches that must reach the CMS. */
const MIN_LEGIT_SHARE = 0.9
/** Edit and listing-pass timings per phase (spread over it), each bounded by PROBE_TIMEOUT_MS. */
const PROBES_PER_PHASE = 3
const PROBE_TIMEOUT_MS = 30_000

export interface FloodShield {
  origin: string
  pid: number
  child: BenchChild
}

export interface FloodOrigin {
  api: string
  control: string
}

export interface FloodSettings {
  seconds: number
  concurrency: number
  readers: number
  latencyMs: number
  timeoutMs: number
  /** Extra cms-shield variables from BENCH_SHIELD_ENV (they win over FLOOD_SHIELD_ENV). */
  shieldEnv: Record<string, string>
  /** CPU for the flooding client (the harness's), when pinned. */
  harnessCpu: number | undefined
}

/** What the scenario borrows from the orchestrator (bench/run.ts): its processes, waits and report. */
export interface FloodContext {
  settings: FloodSettings
  origin: FloodOrigin
  startShield(label: string, env: Record<string, string>): Promise<FloodShield>
  shieldMetrics(shield: FloodShield): Promise<MetricSample[]>
  shieldIdle(shield: FloodShield, timeoutMs: number): Promise<void>
  afterOneSync(shield: FloodShield, timeoutMs: number, trigger: () => Promise<void>): Promise<number>
  addCheck(result: Check): Check
  rows: Row[]
  results: Record<string, unknown>
  /** Waits (bounded) for processes outside the benchmark to quieten. */
  waitQuiet(label: string): Promise<void>
  log(message: string): void
  warn(message: string): void
}

interface OriginHits {
  total: number
  shapes: Partial<Record<RequestShape, number>>
}

interface SiteInfo {
  rootId: number
  sampleIds: number[]
}

interface Endpoints {
  paths: string[]
  parentIds: number[]
  editId: number
}

/** CMS requests a client caused: every shape but the sync's. */
function readThroughOf(hits: OriginHits): number {
  return READ_THROUGH_SHAPES.reduce((sum, shape) => sum + (hits.shapes[shape] ?? 0), 0)
}

function intSetting(env: Record<string, string>, name: string): number {
  const value = Number(env[name])
  if (!Number.isFinite(value)) throw new Error(`flood: ${name}=${JSON.stringify(env[name])} is not a number`)
  return value
}

function row(scenario: string, shield: string, target: string, met: string): Row {
  return { scenario, shield, fastify: '—', node: '—', vsFastify: '—', vsNode: '—', target, met }
}

const median = (values: readonly number[]): number => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)] as number
}

/** The documented endpoints the readers use, each checked to come from the snapshot. */
async function findEndpoints(ctx: FloodContext, shield: FloodShield): Promise<Endpoints> {
  const site = await getJson<SiteInfo>(`${ctx.origin.control}/info`)
  const api = '/api/v1/cms/pages/'
  const menuPath = `${api}?child_of=${site.rootId}&show_in_menus=true&limit=250`
  const menu = await getJson<{ items: Array<{ id: number }> }>(`${shield.origin}${menuPath}`)
  // A children list that is not empty: the first menu entry with children.
  const parentIds: number[] = [site.rootId]
  for (const item of menu.items.slice(0, 10)) {
    const children = await getJson<{ meta: { total_count: number } }>(`${shield.origin}${api}?child_of=${item.id}`)
    if (children.meta.total_count > 0) parentIds.push(item.id)
  }
  const childOf = parentIds[1] ?? site.rootId
  const ids = site.sampleIds
  const detailId = ids[Math.floor(ids.length / 3)] ?? site.rootId
  const editId = ids[Math.floor((2 * ids.length) / 3)] ?? site.rootId
  const paths = [`${api}${detailId}/`, `${api}?child_of=${childOf}`, menuPath]
  for (const path of paths) {
    const response = await call(`${shield.origin}${path}`)
    const cacheStatus = response.headers.get('cache-status') ?? ''
    if (response.status !== 200) throw new Error(`flood: ${path} answered ${response.status}`)
    if (!cacheStatus.includes('detail=snapshot')) ctx.warn(`flood: ${path} is not answered from the snapshot (Cache-Status: ${cacheStatus || 'none'})`)
  }
  return { paths, parentIds, editId }
}

interface ReaderResult {
  latency: LatencySummary
  requests: number
  notOk: number
  errors: number
}

/** `readers` clients in a closed loop over the documented endpoints, for `seconds`. */
async function readDocumented(target: string, paths: readonly string[], readers: number, seconds: number, timeoutMs: number): Promise<ReaderResult> {
  const pool = new Pool(target, { connections: readers, pipelining: 1, localAddress: READER_ADDRESS, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
  const latency = new LatencyRecorder()
  let notOk = 0
  let errors = 0
  let next = 0
  const until = performance.now() + seconds * 1000
  try {
    await Promise.all(
      Array.from({ length: readers }, async () => {
        while (performance.now() < until) {
          const path = paths[next++ % paths.length] as string
          const started = performance.now()
          try {
            const response = await pool.request({ method: 'GET', path, headers: { accept: 'application/json' } })
            await response.body.dump()
            latency.add(performance.now() - started)
            if (response.statusCode !== 200) notOk++
          } catch {
            errors++
            await sleep(10) // a refused connection must not spin
          }
        }
      }),
    )
  } finally {
    await pool.close().catch(() => undefined)
  }
  return { latency: latency.summary(), requests: latency.count, notOk, errors }
}

interface LegitResult {
  sent: number
  reachedCms: number
  statuses: Record<string, number>
  latency: LatencySummary
}

/** One distinct search a second from a client of its own: its misses should still reach the CMS. */
async function legitSearches(target: string, run: string, seconds: number, timeoutMs: number): Promise<LegitResult> {
  const pool = new Pool(target, { connections: 2, pipelining: 1, localAddress: LEGIT_ADDRESS, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
  const statuses: Record<string, number> = {}
  const latency = new LatencyRecorder()
  let reachedCms = 0
  const count = Math.max(1, Math.floor(seconds))
  const started = performance.now()
  const one = async (i: number): Promise<void> => {
    await sleep(Math.max(0, started + i * 1000 - performance.now()))
    const sentAt = performance.now()
    try {
      const response = await pool.request({ method: 'GET', path: `/api/v1/cms/pages/?search=legit-${run}-${i}`, headers: { accept: 'application/json' } })
      await response.body.dump()
      latency.add(performance.now() - sentAt)
      statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1
      const cacheStatus = response.headers['cache-status']
      if (response.statusCode === 200 && typeof cacheStatus === 'string' && cacheStatus.includes('fwd=miss')) reachedCms++
    } catch {
      statuses.error = (statuses.error ?? 0) + 1
    }
  }
  try {
    await Promise.all(Array.from({ length: count }, (_, i) => one(i)))
  } finally {
    await pool.close().catch(() => undefined)
  }
  return { sent: count, reachedCms, statuses, latency: latency.summary() }
}

interface ProbeResult {
  /** From the PURGE of an edited page until cms-shield serves the new title. */
  editMs: number[]
  /** A listing pass: from `PURGE /nowhere/` until the sync it triggers has finished. */
  listingMs: number[]
  errors: string[]
}

/** PROBES_PER_PHASE edits and listing passes, spread over `seconds`. */
async function probeEdits(ctx: FloodContext, shield: FloodShield, editId: number, seconds: number): Promise<ProbeResult> {
  const result: ProbeResult = { editMs: [], listingMs: [], errors: [] }
  const phaseStart = performance.now()
  for (let k = 0; k < PROBES_PER_PHASE; k++) {
    const at = phaseStart + (k * seconds * 1000) / PROBES_PER_PHASE
    // No probe starts in the last second: it would run mostly after the phase.
    if (at > phaseStart + seconds * 1000 - 1_000) break
    await sleep(Math.max(0, at - performance.now()))
    try {
      await ctx.shieldIdle(shield, PROBE_TIMEOUT_MS)
      const edit = await postJson<{ title: string; path: string }>(`${ctx.origin.control}/edit`, { id: editId }, 5_000)
      const started = performance.now()
      const purge = await call(`${shield.origin}${edit.path}`, { method: 'PURGE', timeoutMs: 5_000 })
      if (purge.status !== 200) throw new Error(`PURGE ${edit.path}: ${purge.status}`)
      await waitFor('the edited title to be served', PROBE_TIMEOUT_MS, 20, async () => {
        const response = await call(`${shield.origin}${edit.path}`, { timeoutMs: 5_000 })
        return response.status === 200 && (JSON.parse(response.body.toString('utf8')) as { title?: string }).title === edit.title ? true : undefined
      })
      result.editMs.push(performance.now() - started)
      await ctx.shieldIdle(shield, PROBE_TIMEOUT_MS)
      result.listingMs.push(
        await ctx.afterOneSync(shield, PROBE_TIMEOUT_MS, async () => {
          const response = await call(`${shield.origin}/nowhere/`, { method: 'PURGE', timeoutMs: 5_000 })
          if (response.status !== 200) throw new Error(`PURGE /nowhere/: ${response.status}`)
        }),
      )
    } catch (error) {
      result.errors.push(error instanceof Error ? error.message.split('\n')[0]! : String(error))
    }
  }
  return result
}

/** cms-shield's own count of CMS requests by class, or undefined while its metric has no `class` label. */
function requestsByClass(samples: readonly MetricSample[]): Record<string, number> | undefined {
  const mine = samples.filter((sample) => sample.name === 'cms_shield_cms_requests_total')
  if (!mine.some((sample) => sample.labels.class !== undefined)) return undefined
  const byClass: Record<string, number> = {}
  for (const sample of mine) {
    const key = sample.labels.class ?? 'none'
    byClass[key] = (byClass[key] ?? 0) + sample.value
  }
  return byClass
}

function rejections(samples: readonly MetricSample[]): Record<string, number> | undefined {
  const mine = samples.filter((sample) => sample.name === 'cms_shield_read_through_rejections_total')
  if (mine.length === 0) return undefined
  const byReason: Record<string, number> = {}
  for (const sample of mine) byReason[sample.labels.reason ?? 'none'] = (byReason[sample.labels.reason ?? 'none'] ?? 0) + sample.value
  return byReason
}

function delta(after: Record<string, number> | undefined, before: Record<string, number> | undefined): Record<string, number> | undefined {
  if (after === undefined) return undefined
  return Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - (before?.[key] ?? 0)]))
}

interface PhaseCores {
  /** cms-shield's CPU, in cores. */
  shield: number | null
  /** The whole machine's, less this benchmark's processes: other engineers' work, which moves the numbers. */
  foreign: number | null
}

/**
 * CPU use from now until the returned function is called. The process `selfReported` (the
 * flooding client, which exits at its own time) is left out, and its own count passed at the end.
 */
function cpuMeter(shieldPid: number, selfReported?: number): (reported?: number) => PhaseCores {
  const started = performance.now()
  const machine = machineBusySeconds()
  const own = process.cpuUsage()
  const children = new Map(runningChildren().filter((child) => child.pid !== selfReported).map((child) => [child.pid, processCpuSeconds(child.pid)]))
  return (reported = 0) => {
    const seconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(own)
    let bench = (used.user + used.system) / 1e6 + reported
    for (const [pid, before] of children) {
      const after = processCpuSeconds(pid)
      if (before !== undefined && after !== undefined) bench += after - before
    }
    const shieldBefore = children.get(shieldPid)
    const shieldAfter = processCpuSeconds(shieldPid)
    const machineAfter = machineBusySeconds()
    return {
      shield: shieldBefore === undefined || shieldAfter === undefined ? null : round((shieldAfter - shieldBefore) / seconds, 2),
      foreign: machine === undefined || machineAfter === undefined ? null : round(Math.max(0, machineAfter - machine - bench) / seconds, 2),
    }
  }
}

const fmtCores = (cores: number | null | undefined): string => (cores === null || cores === undefined ? '—' : cores.toFixed(2))

/** Time one scenario needs: setup, the three phases, and the floods' drains. */
export function floodEstimateMs(settings: Pick<FloodSettings, 'seconds' | 'timeoutMs'>): number {
  return (3 * settings.seconds + 60) * 1000 + 2 * settings.timeoutMs
}

/** Niceness of the flooding client in the phase whose readers' latency the checks read. */
const FLOODER_NICENESS = 19

interface FloodPhase {
  flood: FloodReport
  floodRead: ReaderResult
  legit: LegitResult
  floodProbes: ProbeResult
  floodCores: PhaseCores
  hits: OriginHits
  metricsBefore: MetricSample[]
  metricsAfter: MetricSample[]
}

/**
 * One flood phase: readers, the legitimate client and edit probes while the flooding client runs.
 * `priority` is the flooding client's: `shared` runs it at the harness's own priority, `yielding`
 * at nice {@link FLOODER_NICENESS}, so that it does not delay the measured readers on their core.
 */
async function floodPhase(ctx: FloodContext, shield: FloodShield, endpoints: Endpoints, run: string, priority: 'shared' | 'yielding'): Promise<FloodPhase> {
  const { settings } = ctx
  await ctx.waitQuiet(`flood phase (${priority})`)
  ctx.log(`  flood phase, flooding client ${priority === 'shared' ? "at the harness's priority" : `at nice ${FLOODER_NICENESS}`}: the same as quiet, plus ${settings.concurrency} flooding from ${FLOODER_ADDRESS} and one legitimate search a second from ${LEGIT_ADDRESS}`)
  const metricsBefore = await ctx.shieldMetrics(shield)
  await postJson(`${ctx.origin.control}/hits/reset`, {})
  const flooder = new BenchChild('flood-client', ['--import', 'tsx', join('bench', 'flood-client.ts')], {
    env: {
      BENCH_FLOOD_TARGET: shield.origin,
      BENCH_FLOOD_SECONDS: String(settings.seconds),
      BENCH_FLOOD_CONCURRENCY: String(settings.concurrency),
      BENCH_FLOOD_TIMEOUT_MS: String(settings.timeoutMs),
      BENCH_FLOOD_LOCAL_ADDRESS: FLOODER_ADDRESS,
      BENCH_FLOOD_RUN: run,
      BENCH_FLOOD_PARENTS: endpoints.parentIds.join(','),
    },
    ...(settings.harnessCpu === undefined ? {} : { cpu: settings.harnessCpu }),
    ...(priority === 'yielding' ? { niceness: FLOODER_NICENESS } : {}),
  })
  try {
    // It exits by itself once it has reported; a crash still shows, as the wait for its report failing.
    flooder.markStopping()
    const done = flooder.waitForLine(/^flood-client done (\{.*\})$/, 30_000 + settings.seconds * 1000 + settings.timeoutMs)
    // Awaited below; if something else fails first, its rejection must not count as an unhandled one.
    done.catch(() => undefined)
    await flooder.waitForLine(/^flood-client started$/, 30_000)
    const floodCpu = cpuMeter(shield.pid, flooder.pid)
    const [floodRead, legit, floodProbes] = await Promise.all([
      readDocumented(shield.origin, endpoints.paths, settings.readers, settings.seconds, settings.timeoutMs),
      legitSearches(shield.origin, run, settings.seconds, settings.timeoutMs),
      probeEdits(ctx, shield, endpoints.editId, settings.seconds),
    ])
    const flood = JSON.parse((await done)[1] as string) as FloodReport
    const floodCores = floodCpu(flood.cpuSeconds)
    const hits = await getJson<OriginHits>(`${ctx.origin.control}/hits`)
    const metricsAfter = await ctx.shieldMetrics(shield)
    return { flood, floodRead, legit, floodProbes, floodCores, hits, metricsBefore, metricsAfter }
  } finally {
    await flooder.stop()
  }
}

export async function floodScenario(ctx: FloodContext): Promise<void> {
  const { settings } = ctx
  const shieldEnv = { ...FLOOD_SHIELD_ENV, ...settings.shieldEnv }
  const rate = intSetting(shieldEnv, 'READ_THROUGH_RATE')
  const burst = intSetting(shieldEnv, 'READ_THROUGH_BURST')
  const title = `flood: ${settings.concurrency} in parallel from one client for ${settings.seconds} s, origin latency ${settings.latencyMs} ms`
  const run = Date.now().toString(36)
  await postJson(`${ctx.origin.control}/latency`, { ms: 0 })
  ctx.log(`${title}: starting a fresh cms-shield (READ_THROUGH_RATE=${rate}, READ_THROUGH_BURST=${burst})`)
  const shield = await ctx.startShield('cms-shield-flood', FLOOD_SHIELD_ENV)
  try {
    const endpoints = await findEndpoints(ctx, shield)
    // Untimed: compile the readers' paths in cms-shield and in this process before the quiet phase.
    await readDocumented(shield.origin, endpoints.paths, settings.readers, 2, settings.timeoutMs)
    await postJson(`${ctx.origin.control}/latency`, { ms: settings.latencyMs })
    await ctx.shieldIdle(shield, PROBE_TIMEOUT_MS)

    await ctx.waitQuiet('flood quiet phase')
    ctx.log(`  quiet phase: ${settings.readers} readers of ${endpoints.paths.join(', ')} and ${PROBES_PER_PHASE} edits + listing passes, ${settings.seconds} s`)
    const quietCpu = cpuMeter(shield.pid)
    const [quietRead, quietProbes] = await Promise.all([
      readDocumented(shield.origin, endpoints.paths, settings.readers, settings.seconds, settings.timeoutMs),
      probeEdits(ctx, shield, endpoints.editId, settings.seconds),
    ])
    const quietCores = quietCpu()
    await ctx.shieldIdle(shield, PROBE_TIMEOUT_MS)

    // The earlier measurement: the flooding client at the harness's own priority, where it competes
    // with the readers for the harness's core, so the readers' p99 also measures that competition.
    const shared = await floodPhase(ctx, shield, endpoints, run, 'shared')
    await ctx.shieldIdle(shield, PROBE_TIMEOUT_MS)
    // The measurement the checks read: the flooding client yields the harness's core to the readers
    // (nice 19), so the readers' latency is cms-shield's; what cms-shield does is the same.
    const yielded = await floodPhase(ctx, shield, endpoints, `${run}y`, 'yielding')
    const { flood, floodRead, legit, floodProbes, floodCores, hits, metricsBefore, metricsAfter } = yielded

    // Everything a client caused, the legitimate searches included: the budget is the CMS's, for all clients.
    const readThrough = readThroughOf(hits)
    const windowS = flood.durationMs / 1000
    const bound = Math.floor(rate * windowS + burst)
    const byClass = delta(requestsByClass(metricsAfter), requestsByClass(metricsBefore))
    const rejected = delta(rejections(metricsAfter), rejections(metricsBefore))
    const rejectedTotal = (flood.statuses['429'] ?? 0) + (flood.statuses['503'] ?? 0)

    const distinctCheck = ctx.addCheck(check('flood: distinct read-through queries sent', flood.sent, '>=', MIN_FLOOD_QUERIES))
    const retryCheck = ctx.addCheck(check('flood: 429/503 answers without Retry-After', flood.rejectionsWithoutRetryAfter, '==', 0))
    const hangCheck = ctx.addCheck(check(`flood: answers later than ${settings.timeoutMs} ms or never (timeouts, errors)`, flood.late + flood.timeouts + flood.errors, '==', 0))
    const readCheck = ctx.addCheck(check('flood: documented endpoints p99, flood / quiet', floodRead.latency.p99 / quietRead.latency.p99, '<=', MAX_SLOWDOWN))
    const sharedRatio = shared.floodRead.latency.p99 / quietRead.latency.p99
    const legitCheck = ctx.addCheck(check('flood: share of legitimate searches that reached the CMS', legit.reachedCms / legit.sent, '>=', MIN_LEGIT_SHARE))
    // Every edit during the flood counts, so the slowest one is judged (against the quiet median:
    // a quiet phase's own worst is often its first, still warming up).
    const slowdown = (flooded: number[], quiet: number[]): number => (flooded.length === 0 ? Number.NaN : Math.max(...flooded)) / median(quiet)
    const editSlowdown = slowdown(floodProbes.editMs, quietProbes.editMs)
    const listingSlowdown = slowdown(floodProbes.listingMs, quietProbes.listingMs)
    const editCheck = ctx.addCheck(check('flood: edit + PURGE until served, slowest in the flood / quiet median', editSlowdown, '<=', MAX_SLOWDOWN))
    const listingCheck = ctx.addCheck(check('flood: listing pass, slowest in the flood / quiet median', listingSlowdown, '<=', MAX_SLOWDOWN))
    const cmsCheck = ctx.addCheck(check('flood: read-through CMS requests during the flood', readThrough, '<=', bound))

    for (const [phase, probes] of [['quiet', quietProbes], ['flood', floodProbes]] as const) {
      if (probes.errors.length > 0) ctx.warn(`flood: ${phase} phase: ${probes.errors.length} edit/listing probe(s) failed: ${probes.errors.join('; ')}`)
    }
    if (flood.errors > 0) ctx.warn(`flood: ${flood.errors} flood requests failed: ${flood.errorSamples.join('; ')}`)
    if (floodRead.notOk + floodRead.errors + quietRead.notOk + quietRead.errors > 0) {
      ctx.warn(`flood: documented endpoints answered ${quietRead.notOk} non-200 and ${quietRead.errors} errors (quiet), ${floodRead.notOk} and ${floodRead.errors} (flood)`)
    }
    if (byClass === undefined) ctx.log('  /metrics: cms_shield_cms_requests_total has no class label; counting read-through at the fake CMS only')
    else if (Math.abs((byClass.read_through ?? 0) - readThrough) > 5 + 0.05 * readThrough) {
      // Two counts of the same requests: one of them (cms-shield's classes, or the fake CMS's shapes) is wrong.
      ctx.warn(`flood: cms-shield counted ${byClass.read_through ?? 0} read_through CMS requests, the fake CMS ${readThrough} client-caused ones`)
    }

    ctx.results.flood = {
      settings: { ...settings, shieldEnv, run },
      endpoints,
      flood,
      quiet: { read: quietRead, probes: quietProbes, cores: quietCores },
      floodPhase: { read: floodRead, legit, probes: floodProbes, cores: floodCores, flooderNiceness: FLOODER_NICENESS },
      floodPhaseShared: { flood: shared.flood, read: shared.floodRead, legit: shared.legit, probes: shared.floodProbes, cores: shared.floodCores },
      cmsRequests: { originHits: hits, readThrough, windowS: round(windowS, 2), bound, byClass: byClass ?? null, rejections: rejected ?? null },
    }

    const statuses = Object.entries(flood.statuses).sort().map(([status, n]) => `${status}: ${fmtInt(n)}`).join(', ')
    ctx.rows.push(row(
      `${title}: distinct read-through queries (search, order, fields, unknown type, unknown find path, absent id)`,
      `${fmtInt(flood.sent)} sent in ${windowS.toFixed(1)} s (${fmtInt(flood.sent / windowS)}/s, a closed loop: as fast as cms-shield answers); ${statuses}; ` +
        `${fmtInt(rejectedTotal)} × 429/503, ${flood.rejectionsWithoutRetryAfter} without Retry-After ` +
        `(Retry-After ${flood.retryAfterSeconds.min ?? '—'}–${flood.retryAfterSeconds.max ?? '—'} s), ${flood.rejectionsWithoutMessage} without a JSON message; ` +
        `latency p50 ${fmtMs(flood.latencyMs.p50)} · p99 ${fmtMs(flood.latencyMs.p99)} · max ${fmtMs(flood.latencyMs.max, 0)}; ` +
        `${flood.late} late, ${flood.timeouts} timeouts, ${flood.errors} errors`,
      `≥ ${fmtInt(MIN_FLOOD_QUERIES)} queries; every 429/503 with Retry-After; every answer within ${settings.timeoutMs} ms`,
      `queries: ${verdict(distinctCheck)}; Retry-After: ${verdict(retryCheck)}; no hang: ${verdict(hangCheck)}`,
    ))
    ctx.rows.push(row(
      `${title}: documented endpoints (detail, children list, menu), ${settings.readers} readers in a closed loop`,
      `p99 ${fmtMs(floodRead.latency.p99)} vs ${fmtMs(quietRead.latency.p99)} quiet = ${fmtRatio(floodRead.latency.p99 / quietRead.latency.p99)}; ` +
        `p50 ${fmtMs(floodRead.latency.p50)} vs ${fmtMs(quietRead.latency.p50)}; max ${fmtMs(floodRead.latency.max, 0)} vs ${fmtMs(quietRead.latency.max, 0)}; ` +
        `${fmtInt(floodRead.requests / settings.seconds)} vs ${fmtInt(quietRead.requests / settings.seconds)} req/s; ` +
        `cores used by cms-shield ${fmtCores(floodCores.shield)} vs ${fmtCores(quietCores.shield)}, by the flooding client ${fmtCores(flood.cpuSeconds / windowS)}, ` +
        `outside the benchmark ${fmtCores(floodCores.foreign)} vs ${fmtCores(quietCores.foreign)}`,
      `p99 ≤ ${MAX_SLOWDOWN}x quiet`,
      verdict(readCheck),
    ))
    ctx.rows.push(row(
      `${title}: documented endpoints as above, the flooding client at the harness's own priority (the earlier measurement, kept beside the one above)`,
      `p99 ${fmtMs(shared.floodRead.latency.p99)} vs ${fmtMs(quietRead.latency.p99)} quiet = ${fmtRatio(sharedRatio)}; ` +
        `${fmtInt(shared.floodRead.requests / settings.seconds)} vs ${fmtInt(quietRead.requests / settings.seconds)} req/s; ` +
        `cores used by cms-shield ${fmtCores(shared.floodCores.shield)}, by the flooding client ${fmtCores(shared.flood.cpuSeconds / (shared.flood.durationMs / 1000))}; ` +
        `${fmtInt(shared.flood.sent)} flood queries sent`,
      `none: the readers and the flooding client share the harness's core, so this ratio also measures the harness`,
      sharedRatio <= MAX_SLOWDOWN ? `within ${MAX_SLOWDOWN}x` : `above ${MAX_SLOWDOWN}x`,
    ))
    ctx.rows.push(row(
      `${title}: legitimate distinct searches from another client, 1/s`,
      `${legit.reachedCms} of ${legit.sent} reached the CMS (200, fwd=miss) = ${(100 * legit.reachedCms / legit.sent).toFixed(0)}%; ` +
        `statuses ${JSON.stringify(legit.statuses)}; latency p50 ${fmtMs(legit.latency.p50)} · max ${fmtMs(legit.latency.max, 0)}`,
      `≥ ${(MIN_LEGIT_SHARE * 100).toFixed(0)}% (ideally all)`,
      verdict(legitCheck),
    ))
    const fmtProbes = (values: number[]): string => (values.length === 0 ? '—' : `${values.map((v) => v.toFixed(0)).join(', ')} ms`)
    ctx.rows.push(row(
      `${title}: edit + PURGE until served / listing pass (PURGE /nowhere/), each during the flood vs the quiet median`,
      `edit: ${fmtProbes(floodProbes.editMs)} vs ${fmtProbes(quietProbes.editMs)} quiet (median ${fmtMs(median(quietProbes.editMs), 0)}): slowest ${fmtRatio(editSlowdown)}; ` +
        `listing pass: ${fmtProbes(floodProbes.listingMs)} vs ${fmtProbes(quietProbes.listingMs)} quiet (median ${fmtMs(median(quietProbes.listingMs), 0)}): slowest ${fmtRatio(listingSlowdown)}`,
      `each ≤ ${MAX_SLOWDOWN}x the quiet median`,
      `edit: ${verdict(editCheck)}; listing pass: ${verdict(listingCheck)}`,
    ))
    const shapes = READ_THROUGH_SHAPES.map((shape) => `${shape} ${fmtInt(hits.shapes[shape] ?? 0)}`).join(', ')
    const classes = byClass === undefined
      ? 'by class: n/a (no class label on cms_shield_cms_requests_total)'
      : `by class: ${Object.entries(byClass).map(([key, value]) => `${key} ${fmtInt(value)}`).join(', ')}`
    const reasons = rejected === undefined ? 'rejections: n/a' : `rejections: ${Object.entries(rejected).map(([key, value]) => `${key} ${fmtInt(value)}`).join(', ')}`
    ctx.rows.push(row(
      `${title}: CMS requests caused by clients (at the fake CMS), READ_THROUGH_RATE=${rate}, READ_THROUGH_BURST=${burst}`,
      `${fmtInt(readThrough)} read-through (${shapes}; ${legit.reachedCms} of them the legitimate client's) and ${fmtInt(hits.shapes.sync ?? 0)} by the sync, in ${windowS.toFixed(1)} s; ` +
        `cms-shield's /metrics ${classes}; ${reasons}`,
      `≤ rate × ${windowS.toFixed(1)} s + burst = ${fmtInt(bound)}`,
      verdict(cmsCheck),
    ))
  } finally {
    await shield.child.stop()
    await postJson(`${ctx.origin.control}/latency`, { ms: 0 }).catch(() => undefined)
  }
}
