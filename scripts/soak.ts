/**
 * `npm run soak`: cms-shield under steady load for a bounded time, with edits at
 * the origin every few seconds and syncs running all the time, to show that RSS, heap and p99 stay
 * flat and that no timers, handles, descriptors or sockets leak.
 *
 *   npm run soak                                   # 10 minutes at 1,500 req/s, an edit every 3 s
 *   SOAK_DURATION=2m SOAK_WINDOW=10s npm run soak   # a quick look
 *
 * Processes, all on 127.0.0.1 and each its own, as in `npm run bench` (bench/README.md): the fake
 * Wagtail with its control API (`bench/origin.ts`), the built cms-shield (`node dist/main.js`,
 * embedded, no Redis, SYNC_INTERVAL=2s so an incremental sync runs every two seconds, and a full
 * sync every minute), and this process, which runs the load (autocannon at a fixed rate, see
 * scripts/soak/steady-load.ts), the editor (scripts/soak/edit-loop.ts) and the sampler.
 *
 * Every SOAK_WINDOW it records the window's requests, bad answers and latency percentiles, and
 * cms-shield's RSS, heap, descriptors, sockets, active handles and resources, live timers,
 * event-loop lag and syncs (looked at every 2 s, scripts/soak/probe-window.ts), with the machine's
 * load average and the CPU other processes used. cms-shield runs with a small census preloaded
 * (scripts/soak/shield-census.ts) that counts its timers and, at rest before and after the load,
 * forces a full GC so the heap can be compared without GC noise. At the end: one table row per
 * window, the verdict (first third against last third, scripts/soak/soak-report.ts), what
 * cms-shield logged, and `bench/results/soak-latest.json`. Exit code 0 when everything stayed flat
 * and every answer and edit was as expected, 3 otherwise, 1 when the soak could not finish, 2 for
 * a bad setting.
 *
 * Variables: SOAK_DURATION (10m), SOAK_RATE (1500 req/s), SOAK_EDIT_EVERY (3s), SOAK_WINDOW (30s),
 * SOAK_WARMUP (20s, not measured), SOAK_PAGES (1000), SOAK_SHIELD_ENV (extra cms-shield variables,
 * `NAME=value …`), SOAK_OUT (bench/results/soak-latest.json). Everything ends by SOAK_DURATION + 2
 * minutes; every exit path stops the children.
 * @module
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { call, freePort, getJson, GiveUp, sleep, waitFor } from '../bench/lib/http.js'
import { machineInfo } from '../bench/lib/machine.js'
import { BenchChild, killAllChildrenNow, machineBusySeconds, processCpuSeconds, runningChildren, stopAllChildren } from '../bench/lib/processes.js'
import { fmtBytes, fmtInt, fmtMs } from '../bench/lib/report.js'
import { round } from '../bench/lib/stats.js'
import { EditLoop } from './soak/edit-loop.js'
import type { EditRecord } from './soak/edit-loop.js'
import { probeShield } from './soak/process-probe.js'
import type { ProbeTarget, ProcessSample } from './soak/process-probe.js'
import { ProbeWindow } from './soak/probe-window.js'
import type { WindowProcess } from './soak/probe-window.js'
import { censusArgs, collectGarbage } from './soak/shield-census.js'
import type { TimerCensus } from './soak/shield-census.js'
import { summarizeShieldLog } from './soak/shield-log.js'
import type { LogKind } from './soak/shield-log.js'
import { loadSoakConfig, parseDurationMs, SoakConfigError } from './soak/soak-config.js'
import type { SoakConfig } from './soak/soak-config.js'
import { driftChecks, driftTable, fmtValue, LIMITS, median, thirds, windowTable } from './soak/soak-report.js'
import type { SoakWindow } from './soak/soak-report.js'
import { EXPECTED, startSteadyLoad, WindowRecorder } from './soak/steady-load.js'
import type { LoadPlan, SteadyLoad, WindowCounts } from './soak/steady-load.js'

let config: SoakConfig
try {
  config = loadSoakConfig(process.env)
} catch (error) {
  if (!(error instanceof SoakConfigError)) throw error
  process.stderr.write(`soak: ${error.message}\n`)
  process.exit(2)
}

const SHIELD_ENTRY = join('dist', 'main.js')
/** Lanes of the load (see steady-load.ts) and connections in each. */
const LANES = 10
const CONNECTIONS_PER_LANE = 4
/** cms-shield's settings for the soak; SOAK_SHIELD_ENV adds to or overrides them. */
const SHIELD_DEFAULTS: Readonly<Record<string, string>> = {
  LOG_LEVEL: 'warn',
  SYNC_INTERVAL: '2s',
  // Full syncs re-fetch every detail and allocate the most: several of them belong in a soak.
  FULL_SYNC_INTERVAL: '1m',
}
/** Read-through keys (spec: `search=` is always forwarded): a few, so each is a hit most of the time. */
const SEARCH_TERMS = ['dental', 'travel', 'family', 'care', 'orthodontics']
/** Details revalidated with If-None-Match. */
const REVALIDATED_PAGES = 40
/** Before the load starts and after it stops: how long to let connections close before the sample at rest. */
const IDLE_SETTLE_MS = 6_000
/** Looks at cms-shield within a window (see probe-window.ts). */
const PROBE_EVERY_MS = 2_000

const startedAt = Date.now()
const elapsedS = (): string => ((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)
function log(message: string): void {
  process.stdout.write(`[${elapsedS()}s] ${message}\n`)
}
const warnings: string[] = []
function warn(message: string): void {
  warnings.push(message)
  log(`WARNING: ${message}`)
}

// ---------------------------------------------------------------------------------------------
// Processes

interface Origin {
  child: BenchChild
  api: string
  control: string
}

interface Shield {
  child: BenchChild
  url: string
  logFile: string
  /** Where the census in cms-shield (shield-census.ts) writes its timer count and GC results. */
  censusFile: string
  env: Record<string, string>
  readyAfterMs: number
}

let workDir: string | undefined

async function startOrigin(): Promise<Origin> {
  const child = new BenchChild('origin', ['--import', 'tsx', join('bench', 'origin.ts')], {
    env: { BENCH_ORIGIN_PAGES: String(config.pages), BENCH_ORIGIN_LATENCY_MS: '0' },
  })
  const match = await child.waitForLine(/^bench-origin ready api=(\S+) control=(\S+)/, 60_000)
  return { child, api: match[1] as string, control: match[2] as string }
}

async function startShield(origin: Origin): Promise<Shield> {
  if (workDir === undefined) throw new Error('no work directory')
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const env = { ...SHIELD_DEFAULTS, ...config.shieldEnv, UPSTREAM_URL: origin.api, BASE_URL: url, PORT: String(port), HOST: '127.0.0.1' }
  const spawnedAt = performance.now()
  const censusFile = join(workDir, 'shield-census.json')
  const logFile = join(workDir, 'cms-shield.log')
  const child = new BenchChild('cms-shield', [...censusArgs(censusFile), SHIELD_ENTRY], { env, stdoutFile: logFile })
  await waitFor('cms-shield /readyz 200', 60_000, 100, async () => {
    if (!child.alive) throw new GiveUp(`cms-shield exited before it was ready:\n${child.output()}`)
    const response = await call(`${url}/readyz`, { timeoutMs: 2_000 })
    return response.status === 200 ? true : undefined
  })
  return { child, url, logFile, censusFile, env, readyAfterMs: performance.now() - spawnedAt }
}

// ---------------------------------------------------------------------------------------------
// What the load asks for

interface SiteInfo {
  pages: number
  rootId: number
  sampleIds: number[]
}

async function readEtags(shield: Shield, paths: readonly string[]): Promise<Array<readonly [string, string]>> {
  const etags: Array<readonly [string, string]> = []
  for (const path of paths) {
    const response = await call(`${shield.url}${path}`, { timeoutMs: 5_000 })
    const etag = response.headers.get('etag')
    if (response.status === 200 && etag !== null) etags.push([path, etag])
  }
  return etags
}

async function buildPlan(shield: Shield, site: SiteInfo): Promise<LoadPlan> {
  const detailPaths = site.sampleIds.map((id) => `/api/v1/cms/pages/${id}/`)
  const seedPath = `/api/v1/cms/pages/?child_of=${site.rootId}&show_in_menus=true&limit=250`
  const listPath = '/api/v1/cms/pages/'
  const searchPaths = SEARCH_TERMS.map((term) => `/api/v1/cms/pages/?search=${term}`)
  // Top-level pages are never moved by the editor, so their html_path always finds them.
  const topLevel = await getJson<{ items: Array<{ meta: { html_url: string | null } }> }>(`${shield.url}/api/v1/cms/pages/?child_of=${site.rootId}&limit=250`)
  const findPaths: string[] = []
  for (const item of topLevel.items) {
    if (item.meta.html_url === null) continue
    const path = `/api/v1/cms/pages/find/?html_path=${encodeURIComponent(new URL(item.meta.html_url).pathname)}`
    const response = await call(`${shield.url}${path}`, { timeoutMs: 5_000 })
    if (response.status === 302) findPaths.push(path)
    if (findPaths.length >= 10) break
  }
  if (findPaths.length === 0) throw new Error('no top-level html_path answered 302 on find/')
  for (const path of [seedPath, listPath, ...searchPaths]) {
    // The first read-through request is the miss that stores the entry.
    const response = await call(`${shield.url}${path}`, { timeoutMs: 10_000 })
    if (response.status !== 200) throw new Error(`${path}: cms-shield answered ${response.status}`)
  }
  const step = Math.max(1, Math.floor(detailPaths.length / REVALIDATED_PAGES))
  const etags = await readEtags(shield, detailPaths.filter((_, i) => i % step === 0).slice(0, REVALIDATED_PAGES))
  return { detailPaths, seedPath, listPath, searchPaths, findPaths, etags }
}

// ---------------------------------------------------------------------------------------------
// Results

interface IdleSample {
  fds: number | null
  sockets: number | null
  socketKinds: Record<string, number> | null
  timers: TimerCensus | null
  /** Memory right after two forced full collections; null when the census did not answer. */
  afterGc: { heapUsed: number; rss: number; external: number } | null
  activeHandles: Record<string, number>
  activeResources: Record<string, number>
  rssBytes: number | null
  heapUsedBytes: number
}

/** cms-shield at rest: a full collection first, then one look. */
async function atRest(target: ProbeTarget): Promise<IdleSample> {
  const gc = target.censusFile === undefined ? undefined : await collectGarbage(target.censusFile)
  if (gc === undefined) warn('the census in cms-shield did not run the full collection asked for')
  return idle(await probeShield(target), gc ? { heapUsed: gc.heapUsed, rss: gc.rss, external: gc.external } : null)
}

const idle = (sample: ProcessSample, afterGc: IdleSample['afterGc']): IdleSample => ({
  fds: sample.fds,
  sockets: sample.sockets,
  socketKinds: sample.socketKinds,
  timers: sample.timers,
  afterGc,
  activeHandles: sample.activeHandles,
  activeResources: sample.activeResources,
  rssBytes: sample.rssBytes,
  heapUsedBytes: sample.heapUsedBytes,
})

interface WindowDetail {
  window: SoakWindow
  counts: Omit<WindowCounts, 'latencyMs'>
  process: WindowProcess
  edits: EditRecord[]
  loadavg: number[]
}

const details: WindowDetail[] = []
const allEdits: EditRecord[] = []
let idleBefore: IdleSample | undefined
let idleAfter: IdleSample | undefined
let shieldInfo: { readyAfterMs: number; env: Record<string, string>; pages: number; logFile: string } | undefined
let editTotals = { edits: 0, purges: 0 }

const machine = machineInfo(startedAt)

function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

interface Verdict {
  flat: boolean
  reasons: string[]
}

let shieldLog: LogKind[] = []
/** How long an edit may take to be served before it counts as late (set once cms-shield's SYNC_INTERVAL is known). */
let editBoundMs = 0
let reported = false
function report(status: 'complete' | 'incomplete', reason?: string): Verdict | undefined {
  if (reported) return undefined
  reported = true
  if (editor) editTotals = { edits: editor.edits, purges: editor.purges }
  if (shieldInfo) shieldLog = summarizeShieldLog(shieldInfo.logFile)
  const windows = details.map((detail) => detail.window)
  const lines: string[] = ['']
  const minutes = config.durationMs / 60_000
  lines.push(`## cms-shield soak (${status}${reason ? `: ${reason}` : ''})`)
  lines.push('')
  lines.push(
    `${minutes % 1 === 0 ? minutes : minutes.toFixed(1)} min measured (after ${config.warmupMs / 1000} s warm-up) at a fixed ${fmtInt(config.rate)} req/s ` +
      `(${LANES} autocannon lanes × ${CONNECTIONS_PER_LANE} connections), an edit every ${config.editEveryMs / 1000} s, ${config.windowMs / 1000} s windows; ` +
      `site of ${fmtInt(shieldInfo?.pages ?? config.pages)} pages; cms-shield ${Object.entries(shieldInfo?.env ?? {}).filter(([key]) => !['UPSTREAM_URL', 'BASE_URL', 'PORT', 'HOST'].includes(key)).map(([k, v]) => `${k}=${v}`).join(' ')}. ` +
      `${machine.cpus} × ${machine.cpuModel}, node ${machine.node}, ${machine.date}` +
      `${machine.git ? `, commit ${machine.git.commit.slice(0, 12)}${machine.git.srcDiffersFromCommit ? ' with uncommitted changes in src/' : ''}` : ''}.`,
  )
  lines.push('')
  if (windows.length > 0) lines.push(windowTable(windows))
  let verdict: Verdict | undefined
  const checks = windows.length >= 3 ? driftChecks(windows) : []
  if (windows.length >= 3) {
    const { first, last } = thirds(windows)
    const load1First = median(first.map((w) => w.load1))
    const load1Last = median(last.map((w) => w.load1))
    const foreignOf = (part: SoakWindow[]): string => {
      const known = part.map((w) => w.foreignCores).filter((value): value is number => value !== null)
      return known.length === 0 ? '—' : median(known).toFixed(2)
    }
    const requests = windows.reduce((sum, w) => sum + w.requests, 0)
    const bad = windows.reduce((sum, w) => sum + w.bad, 0)
    const badStatuses: Record<string, number> = {}
    for (const detail of details) {
      for (const [key, count] of Object.entries(detail.counts.statuses)) {
        const [kind, status] = key.split(' ')
        if (!expectedStatus(kind as string, Number(status))) badStatuses[key] = (badStatuses[key] ?? 0) + count
      }
    }
    const errors = details.reduce((sum, d) => sum + d.counts.errors, 0)
    const timeouts = details.reduce((sum, d) => sum + d.counts.timeouts, 0)
    const visible = allEdits.filter((edit) => edit.outcome === 'visible').map((edit) => edit.visibleMs as number)
    const late = allEdits.filter((edit) => edit.outcome === 'late')
    const failed = allEdits.filter((edit) => edit.outcome === 'failed')
    const byOp: Record<string, number> = {}
    for (const edit of allEdits) byOp[edit.op] = (byOp[edit.op] ?? 0) + 1
    // Three questions, answered apart: does anything leak, does latency creep, and did readers and
    // editors get what they should all along.
    const leaks: string[] = []
    for (const check of checks) if (!check.flat && check.name !== 'p99 latency') leaks.push(`${check.name} grew ${fmtValue(check, check.firstThird)} → ${fmtValue(check, check.lastThird)}`)
    // Readers' connections must all close with the readers; the CMS pool is warm or not depending on the sync's timing.
    const clientsBefore = idleBefore?.socketKinds?.client
    const clientsAfter = idleAfter?.socketKinds?.client
    if (clientsBefore !== undefined && clientsAfter !== undefined && clientsAfter - clientsBefore > LIMITS.descriptors) {
      leaks.push(`${clientsAfter - clientsBefore} more reader connections open at rest after the soak than before it`)
    }
    const timersBefore = idleBefore?.timers?.live
    const timersAfter = idleAfter?.timers?.live
    if (timersBefore !== undefined && timersAfter !== undefined && timersAfter - timersBefore > LIMITS.timers) {
      leaks.push(`${timersAfter - timersBefore} more live timers at rest after the soak than before it`)
    }
    const p99 = checks.find((check) => check.name === 'p99 latency')
    const latency = p99 && !p99.flat ? [`p99 rose ${fmtMs(p99.firstThird)} → ${fmtMs(p99.lastThird)} (limit ${LIMITS.p99Ratio}×)`] : []
    const syncFailed = windows.reduce((sum, w) => sum + w.syncFailed, 0)
    // A sync that meets an edit in progress refuses to publish a mix (SYNC_INCONSISTENT) and is
    // retried: with edits every few seconds that is expected, and judged by the edits being served
    // in time. Any other failure is a fault.
    const syncRaced = windows.reduce((sum, w) => sum + w.syncRaced, 0)
    const service: string[] = []
    if (bad > 0) service.push(`${bad} bad answers`)
    if (late.length > 0) service.push(`${late.length} edits not served within ${Math.round(editBoundMs / 1000)} s`)
    if (failed.length > 0) service.push(`${failed.length} edits refused by the origin`)
    if (syncFailed - syncRaced > 0) service.push(`${syncFailed - syncRaced} failed syncs (other than edits racing a sync)`)
    const reasons = [...leaks, ...latency, ...service]
    verdict = { flat: reasons.length === 0, reasons }
    lines.push('')
    lines.push(
      `### Verdict: ${leaks.length === 0 ? 'no leak (memory, descriptors, sockets, handles, timers flat)' : `LEAK? ${leaks.join('; ')}`}; ` +
        `${latency.length === 0 ? 'p99 flat' : latency[0]}; ${service.length === 0 ? 'every answer and edit as expected' : service.join(', ')}`,
    )
    lines.push('')
    lines.push(driftTable(checks))
    lines.push('')
    lines.push(
      `- Machine: load average (1 min) median ${load1First.toFixed(2)} in the first third, ${load1Last.toFixed(2)} in the last; ` +
        `other processes used ${foreignOf(first)} and ${foreignOf(last)} of the ${machine.cpus} cores` +
        `${load1Last > load1First * 1.3 && load1Last - load1First > 0.3 ? ' — the machine was busier at the end: read a p99 rise against that' : ''}.`,
    )
    lines.push(
      `- Requests: ${fmtInt(requests)}, ${bad === 0 ? 'every one answered as expected' : `${fmtInt(bad)} bad (${JSON.stringify(badStatuses)}; ${errors} transport errors, ${timeouts} timeouts)`}; ` +
        `${fmtInt(windows.reduce((sum, w) => sum + w.etagChanged, 0))} revalidations got a new 200 because the page had changed.`,
    )
    lines.push(
      `- Edits: ${editTotals.edits} (${Object.entries(byOp).map(([op, count]) => `${op} ${count}`).join(', ')}), ${editTotals.purges} PURGEs; ` +
        `served after p50 ${fmtMs(percentile(visible, 50), 0)}, p99 ${fmtMs(percentile(visible, 99), 0)}, max ${fmtMs(percentile(visible, 100), 0)}; ` +
        `${late.length} not served in time, ${failed.length} refused, ` +
        `${allEdits.filter((edit) => edit.outcome === 'superseded').length} superseded by a later edit of the same page before they showed.`,
    )
    lines.push(
      `- Syncs: ${windows.reduce((sum, w) => sum + w.syncRuns, 0)} in the measured windows, ${syncFailed} of them failed` +
        `${syncRaced > 0 ? ` (${syncRaced} met an edit in progress, SYNC_INCONSISTENT, and were retried)` : ''}; snapshot v${windows[0]?.snapshotVersion} → v${windows.at(-1)?.snapshotVersion}.`,
    )
    for (const kind of shieldLog.slice(0, 5)) lines.push(`- cms-shield logged ${kind.count} × ${kind.kind}`)
    const firstWindow = windows[0] as SoakWindow
    const lastWindow = windows.at(-1) as SoakWindow
    // Read-through keys carry the digest of the pages they depend on (the whole tree for search=),
    // so every new snapshot starts new entries and the old ones stay until the byte bound evicts them.
    lines.push(
      `- Read-through memory tier: ${fmtBytes(firstWindow.cacheBytes)} in ${fmtInt(firstWindow.cacheEntries)} entries after the first window → ` +
        `${fmtBytes(lastWindow.cacheBytes)} in ${fmtInt(lastWindow.cacheEntries)} after the last (bound: CACHE_MAX_BYTES, ${shieldInfo?.env.CACHE_MAX_BYTES ?? '64mb'}).`,
    )
    if (idleBefore && idleAfter) {
      const gcBefore = idleBefore.afterGc
      const gcAfter = idleAfter.afterGc
      lines.push(
        `- At rest, before the load → ${IDLE_SETTLE_MS / 1000} s after it, each time right after two forced full GCs: ` +
          `heap ${fmtBytes(gcBefore?.heapUsed)} → ${fmtBytes(gcAfter?.heapUsed)}, external ${fmtBytes(gcBefore?.external)} → ${fmtBytes(gcAfter?.external)}, ` +
          `RSS ${fmtBytes(gcBefore?.rss)} → ${fmtBytes(gcAfter?.rss)}; ` +
          `sockets ${JSON.stringify(idleBefore.socketKinds)} → ${JSON.stringify(idleAfter.socketKinds)}, fds ${idleBefore.fds} → ${idleAfter.fds}; ` +
          `live timers ${idleBefore.timers?.live ?? '—'} → ${idleAfter.timers?.live ?? '—'} (${JSON.stringify(idleAfter.timers?.groups ?? {})}); ` +
          `handles ${JSON.stringify(idleBefore.activeHandles)} → ${JSON.stringify(idleAfter.activeHandles)}.`,
      )
    }
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
    verdict: verdict ?? null,
    machine,
    config: { ...config, lanes: LANES, connectionsPerLane: CONNECTIONS_PER_LANE },
    limits: LIMITS,
    shield: shieldInfo ?? null,
    elapsedSeconds: round((Date.now() - startedAt) / 1000, 1),
    checks,
    idleBefore: idleBefore ?? null,
    idleAfter: idleAfter ?? null,
    windows: details,
    editsWithProblems: allEdits.filter((edit) => edit.outcome === 'late' || edit.outcome === 'failed'),
    shieldLog,
    warnings,
  }
  try {
    mkdirSync(join(config.out, '..'), { recursive: true })
    writeFileSync(config.out, `${JSON.stringify(json, null, 2)}\n`)
    process.stdout.write(`\nwrote ${config.out}\n`)
  } catch (error) {
    process.stderr.write(`soak: could not write ${config.out}: ${error instanceof Error ? error.message : String(error)}\n`)
  }
  return verdict
}

function expectedStatus(kind: string, status: number): boolean {
  return (EXPECTED as Record<string, readonly number[] | undefined>)[kind]?.includes(status) ?? false
}

// ---------------------------------------------------------------------------------------------
// The soak

let load: SteadyLoad | undefined
let editor: EditLoop | undefined
let probes: ProbeWindow | undefined

async function cleanupAndExit(code: number, status: 'complete' | 'incomplete', reason?: string): Promise<never> {
  const verdict = report(status, reason)
  await probes?.stop().catch(() => undefined)
  await load?.stop().catch(() => undefined)
  await editor?.stop(0).catch(() => undefined)
  await stopAllChildren(3_000).catch(() => undefined)
  if (workDir !== undefined) {
    if (status === 'complete' && verdict?.flat) rmSync(workDir, { recursive: true, force: true })
    else process.stdout.write(`kept ${workDir} (cms-shield's log) for a look\n`)
  }
  process.exit(code === 0 && verdict && !verdict.flat ? 3 : code)
}

process.on('exit', () => killAllChildrenNow())
process.once('SIGINT', () => void cleanupAndExit(130, 'incomplete', 'interrupted (SIGINT)'))
process.once('SIGTERM', () => void cleanupAndExit(143, 'incomplete', 'terminated (SIGTERM)'))
process.on('unhandledRejection', (error) => void cleanupAndExit(1, 'incomplete', `unhandled rejection: ${error instanceof Error ? error.message : String(error)}`))
const deadlineTimer = setTimeout(() => {
  void cleanupAndExit(1, 'incomplete', `deadline of ${Math.round(config.deadlineMs / 1000)} s (SOAK_DURATION + 2 min) reached`)
}, config.deadlineMs)

/** CPU seconds the machine spent busy, and of those the soak's own (this process and its children). */
function cpuNow(): { machine: number | undefined; soak: number } {
  const own = process.cpuUsage()
  let soak = (own.user + own.system) / 1e6
  for (const child of runningChildren()) soak += processCpuSeconds(child.pid) ?? 0
  return { machine: machineBusySeconds(), soak }
}

function foreignCores(from: ReturnType<typeof cpuNow>, to: ReturnType<typeof cpuNow>, seconds: number): number | null {
  if (from.machine === undefined || to.machine === undefined) return null
  return round(Math.max(0, to.machine - from.machine - (to.soak - from.soak)) / seconds, 2)
}

function summarizeWindow(index: number, endS: number, windowS: number, counts: WindowCounts, proc: WindowProcess, previous: ProcessSample, edits: EditRecord[], harnessElu: number, foreign: number | null): SoakWindow {
  const visible = edits.filter((edit) => edit.outcome === 'visible').map((edit) => edit.visibleMs as number)
  const sample = proc.last
  const cores = sample.cpuSeconds === null || previous.cpuSeconds === null ? null : round((sample.cpuSeconds - previous.cpuSeconds) / windowS, 3)
  return {
    index,
    endS: round(endS, 1),
    requests: counts.requests,
    rps: round(counts.requests / windowS, 1),
    p50Ms: round(counts.latencyMs.p50, 3),
    p99Ms: round(counts.latencyMs.p99, 3),
    maxMs: round(counts.latencyMs.max, 3),
    bad: counts.unexpected + counts.errors,
    etagChanged: counts.etagChanged,
    rssBytes: proc.rssBytes,
    heapFloorBytes: proc.heapFloorBytes,
    heapPeakBytes: proc.heapPeakBytes,
    externalBytes: proc.externalBytes,
    cacheBytes: sample.cacheBytes,
    cacheEntries: sample.cacheEntries,
    fds: proc.fds,
    sockets: proc.sockets,
    activeHandlesTotal: proc.activeHandlesTotal,
    activeResourcesTotal: proc.activeResourcesTotal,
    timers: proc.timers,
    refedTimeouts: proc.refedTimeouts,
    loopLagP99Ms: round(proc.loopLagP99Ms, 2),
    loopLagMaxMs: round(proc.loopLagMaxMs, 2),
    syncRuns: sample.syncRuns - previous.syncRuns,
    syncFailed: sample.syncFailures - previous.syncFailures,
    syncRaced: sample.syncRaced - previous.syncRaced,
    snapshotVersion: sample.snapshotVersion,
    edits: edits.length,
    editVisibleMaxMs: visible.length === 0 ? null : Math.max(...visible),
    shieldCores: cores,
    foreignCores: foreign,
    harnessElu: round(harnessElu, 3),
    load1: round(loadavg()[0] ?? 0, 2),
  }
}

async function main(): Promise<void> {
  if (!existsSync(SHIELD_ENTRY)) throw new Error(`${SHIELD_ENTRY} is missing: run \`npm run build\` first (\`npm run soak\` does)`)
  workDir = mkdtempSync(join(tmpdir(), 'cms-shield-soak-'))
  const windows = Math.floor(config.durationMs / config.windowMs)
  log(`cms-shield soak: ${windows} windows of ${config.windowMs / 1000} s at ${config.rate} req/s, an edit every ${config.editEveryMs / 1000} s; deadline ${Math.round(config.deadlineMs / 1000)} s; work directory ${workDir}`)
  const origin = await startOrigin()
  const site = await getJson<SiteInfo>(`${origin.control}/info`)
  const shield = await startShield(origin)
  shieldInfo = { readyAfterMs: Math.round(shield.readyAfterMs), env: shield.env, pages: site.pages, logFile: shield.logFile }
  log(`cms-shield ready after ${shield.readyAfterMs.toFixed(0)} ms at ${shield.url} (${fmtInt(site.pages)} pages, origin ${origin.api})`)
  const plan = await buildPlan(shield, site)
  log(`load mix: ${plan.detailPaths.length} details, ${plan.etags.length} revalidated, seed list, default list, ${plan.searchPaths.length} search keys, ${plan.findPaths.length} find paths`)
  await sleep(IDLE_SETTLE_MS)
  const target: ProbeTarget = { url: shield.url, pid: shield.child.pid, cmsPort: Number(new URL(origin.api).port), censusFile: shield.censusFile }
  idleBefore = await atRest(target)

  const recorder = new WindowRecorder()
  const syncIntervalMs = parseDurationMs('SYNC_INTERVAL', shield.env.SYNC_INTERVAL ?? '60s')
  // Two sync intervals (an edit just after a listing pass waits for the next) plus room for a full sync.
  editBoundMs = 2 * syncIntervalMs + 10_000
  editor = new EditLoop({ control: origin.control, shield: shield.url, everyMs: config.editEveryMs, visibleWithinMs: editBoundMs, startedAt })
  load = startSteadyLoad({
    origin: shield.url,
    rate: config.rate,
    lanes: LANES,
    connectionsPerLane: CONNECTIONS_PER_LANE,
    maxDurationS: Math.ceil((config.warmupMs + config.durationMs) / 1000) + 30,
    plan,
    recorder,
  })
  editor.start()
  log(`warm-up: ${config.warmupMs / 1000} s of load and edits, not measured`)
  await sleep(config.warmupMs)
  recorder.take()
  allEdits.push(...editor.take())
  let previous = await probeShield(target)
  probes = new ProbeWindow(target, PROBE_EVERY_MS)
  probes.start()
  let elu = performance.eventLoopUtilization()
  let cpu = cpuNow()
  const measuredFrom = Date.now()
  for (let index = 0; index < windows; index++) {
    const windowEnd = measuredFrom + (index + 1) * config.windowMs
    await sleep(Math.max(0, windowEnd - Date.now()))
    if (!shield.child.alive) throw new Error(`cms-shield exited during the soak:\n${shield.child.output()}`)
    if (!origin.child.alive) throw new Error('the origin exited during the soak')
    const counts = recorder.take()
    const proc = await probes.take()
    if (proc.failedLooks > 0) warn(`window ${index + 1}: ${proc.failedLooks} of ${proc.looks + proc.failedLooks} looks at /metrics failed, e.g. ${proc.firstError}`)
    const edits = editor.take()
    allEdits.push(...edits)
    const harnessElu = performance.eventLoopUtilization(elu).utilization
    elu = performance.eventLoopUtilization()
    const cpuAtEnd = cpuNow()
    const foreign = foreignCores(cpu, cpuAtEnd, config.windowMs / 1000)
    cpu = cpuAtEnd
    const window = summarizeWindow(index, (Date.now() - measuredFrom) / 1000, config.windowMs / 1000, counts, proc, previous, edits, harnessElu, foreign)
    const { latencyMs: _latency, ...rest } = counts
    details.push({ window, counts: rest, process: proc, edits, loadavg: loadavg().map((value) => round(value, 2)) })
    previous = proc.last
    log(
      `window ${index + 1}/${windows}: ${fmtInt(window.rps)} req/s, p50 ${fmtMs(window.p50Ms)}, p99 ${fmtMs(window.p99Ms)}, ${window.bad} bad; ` +
        `RSS ${((window.rssBytes ?? 0) / 1024 ** 2).toFixed(1)} MiB, heap ${(window.heapFloorBytes / 1024 ** 2).toFixed(1)}–${(window.heapPeakBytes / 1024 ** 2).toFixed(1)} MiB, ` +
        `fds ${window.fds}, sockets ${window.sockets}, handles ${window.activeHandlesTotal}, timers ${window.timers ?? '—'}; ` +
        `${window.syncRuns} syncs (${window.syncFailed} failed), ${window.edits} edits; load ${window.load1.toFixed(2)}, other processes ${window.foreignCores ?? '—'} cores`,
    )
    if (counts.errorSamples.length > 0) warn(`window ${index + 1}: ${counts.errors} request errors, e.g. ${counts.errorSamples.join(' | ')}`)
    if (window.harnessElu > 0.9) warn(`window ${index + 1}: the load generator was saturated (ELU ${window.harnessElu.toFixed(2)}); its latencies include its own queueing`)
    // ETags change as pages are edited: read them again so most revalidations stay 304s.
    plan.etags = await readEtags(shield, plan.etags.map(([path]) => path))
  }
  await probes.stop()
  probes = undefined
  await load.stop()
  load = undefined
  log('load stopped; letting the last edits show')
  await editor.stop(editBoundMs)
  allEdits.push(...editor.take())
  editTotals = { edits: editor.edits, purges: editor.purges }
  editor = undefined
  await sleep(IDLE_SETTLE_MS)
  idleAfter = await atRest(target)
  await shield.child.stop()
  await origin.child.stop()
}

main().then(
  () => {
    clearTimeout(deadlineTimer)
    void cleanupAndExit(0, 'complete')
  },
  (error: unknown) => {
    clearTimeout(deadlineTimer)
    process.stderr.write(`soak: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    void cleanupAndExit(1, 'incomplete', error instanceof Error ? error.message.split('\n')[0] : String(error))
  },
)
