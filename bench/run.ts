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
 * This file is the runner: it reads the configuration, pins, starts the fake CMS and the shared
 * cms-shield, runs the selected scenarios (one module each in `bench/scenarios/`, helpers in
 * `bench/lib/`) in the documented order, and writes the report.
 * See bench/README.md for the scenarios, the variables and how to read the ratios.
 * @module
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBaseline } from './lib/baselines.js'
import { readConfig, SHIELD_ENTRY } from './lib/config.js'
import type { ScenarioId } from './lib/config.js'
import type { BenchContext } from './lib/context.js'
import { writeReport } from './lib/final-report.js'
import { getJson, hasMetric, postJson } from './lib/http.js'
import { machineInfo } from './lib/machine.js'
import { startOrigin } from './lib/origin-control.js'
import type { Origin, SiteInfo } from './lib/origin-control.js'
import { Pacing } from './lib/pacing.js'
import { cpuPinning, killAllChildrenNow, pinSelf, stopAllChildren } from './lib/processes.js'
import { Recorder } from './lib/recorder.js'
import { fmtInt } from './lib/report.js'
import { Schedule } from './lib/schedule.js'
import { afterOneSync, shieldIdle, shieldMetrics, startShield } from './lib/shield.js'
import type { Shield } from './lib/shield.js'
import { coldScenario } from './scenarios/cold.js'
import { editsScenario } from './scenarios/edits.js'
import { floodEstimateMs, floodScenario } from './scenarios/flood.js'
import { frontendScenario } from './scenarios/frontend.js'
import { largeScenario } from './scenarios/large.js'
import { purgeScenario } from './scenarios/purge.js'
import { loggingScenario } from './scenarios/logging.js'
import { syncScenario } from './scenarios/sync.js'
import { syncCostScenario } from './scenarios/sync-cost.js'
import { syncCpuScenario } from './scenarios/sync-cpu.js'
import { detailIdOf, throughputScenario } from './scenarios/throughput.js'
import type { ThroughputState } from './scenarios/throughput.js'
import { headerCostScenario } from './scenarios/header-cost.js'
import { wrkScenario } from './scenarios/wrk.js'

// ---------------------------------------------------------------------------------------------
// Configuration, the deadline and what the run collects

const config = readConfig()
const startedAt = Date.now()
const deadline = startedAt + config.maxSeconds * 1000
const recorder = new Recorder(startedAt)
const { log, warn } = recorder
const schedule = new Schedule(config, deadline, floodEstimateMs(config.flood))
const { selected } = schedule
const pacing = new Pacing(config.quietWaitS, schedule, log)

const machine = machineInfo(startedAt)
/** CPU 0 for the harness and the fake CMS, the other for the server being measured (undefined: unpinned). */
const pinning = cpuPinning(config.pin, Number(machine.cpus))

let reported = false
function report(status: 'complete' | 'incomplete', reason?: string): void {
  if (reported) return
  reported = true
  writeReport({ config, machine, pinning, recorder }, status, reason)
}

let workDir: string | undefined

/** What every scenario gets: this run's configuration, processes, waits and report. */
function contextFor(origin: Origin, dir: string): BenchContext {
  return {
    config,
    origin,
    workDir: dir,
    recorder,
    schedule,
    pacing,
    startShield: (label, logLevel, readyTimeoutMs, env, at) =>
      startShield({ workDir: dir, cpu: pinning?.server, shieldEnv: config.shieldEnv, nodeArgs: config.shieldNodeArgs }, label, at ?? origin, logLevel, readyTimeoutMs, env),
    startBaseline: (kind, bodyFile, headersFile, options) =>
      startBaseline({ cpu: pinning?.server, headerSet: config.baselineHeaders }, kind, bodyFile, headersFile, options),
  }
}

/** The flood scenario lives in scenarios/flood.ts; it gets this run's processes, waits and report. */
async function floodPhase(ctx: BenchContext): Promise<void> {
  if (schedule.spareMs('flood') < schedule.estimateMs('flood')) {
    recorder.skip('flood', 'not enough time left before BENCH_MAX_SECONDS')
    return
  }
  await floodScenario({
    settings: { ...config.flood, shieldEnv: config.shieldEnv, harnessCpu: pinning?.harness },
    origin: ctx.origin,
    startShield: (label, env) => ctx.startShield(label, 'warn', 60_000, env),
    shieldMetrics,
    shieldIdle,
    afterOneSync,
    addCheck: recorder.addCheck,
    rows: recorder.rows,
    results: recorder.results,
    waitQuiet: (label) => pacing.quiet('flood', label),
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
    if (status === 'complete' && !config.keepLogs) rmSync(workDir, { recursive: true, force: true })
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
  const origin = await startOrigin(config.pages, pinning)
  const ctx = contextFor(origin, workDir)
  const throughput: ThroughputState = { byId: {}, shieldWarmedUp: false }
  log(`origin: api ${origin.api}, control ${origin.control}`)

  const first = (['detail', 'seed', '304'] as const).filter(selected)
  const last = (['readthrough', 'list'] as const).filter(selected)
  // One cms-shield serves the throughput, logging and cold-key rows; it stays up (idle, never
  // syncing again) while the sync and large-site rows run their own, and the origin gets the same
  // site back before the last rows.
  let shield: Shield | undefined
  let site: SiteInfo | undefined
  if ([...first, ...last, 'wrk', 'headers', 'logging', 'cold'].some((id) => selected(id as ScenarioId))) {
    site = await getJson<SiteInfo>(`${origin.control}/info`)
    shield = await ctx.startShield('cms-shield', 'warn', 60_000)
    log(`cms-shield ready after ${shield.readyAfterMs.toFixed(0)} ms at ${shield.origin} (${fmtInt(site.pages)} pages)`)
    const metrics = await shieldMetrics(shield)
    for (const name of ['cms_shield_sync_duration_seconds_sum', 'cms_shield_sync_runs_total', 'cms_shield_process_resident_memory_bytes', 'cms_shield_nodejs_heap_size_used_bytes', 'cms_shield_snapshot_version']) {
      if (!hasMetric(metrics, name)) warn(`/metrics has no ${name}; the rows that read it will be wrong`)
    }
    await throughputScenario(ctx, throughput, first, shield, site)
    if (selected('wrk')) await wrkScenario(ctx, shield, site, pinning?.harness)
    if (selected('headers')) {
      if (schedule.spareMs('headers') < schedule.estimateMs('headers')) recorder.skip('headers', 'not enough time left before BENCH_MAX_SECONDS')
      else await headerCostScenario(ctx, await detailIdOf(ctx, shield, site), pinning?.harness)
    }
    if (selected('logging')) await loggingScenario(ctx, shield, await detailIdOf(ctx, shield, site), throughput.byId.detail)
    if (selected('cold')) await coldScenario(ctx, shield)
  }
  if (selected('sync')) await syncScenario(ctx)
  if (selected('large')) await largeScenario(ctx, pinning?.harness)
  if (selected('sync-cpu')) await syncCpuScenario(ctx)
  if ((selected('sync') || selected('large') || selected('sync-cpu')) && (last.length > 0 || selected('flood'))) {
    const restored = await postJson<SiteInfo>(`${origin.control}/site`, { pages: config.pages }, 120_000)
    if (site && restored.pages !== site.pages) throw new Error('the origin did not get the throughput site back')
  }
  if (shield && site && last.length > 0) await throughputScenario(ctx, throughput, last, shield, site)
  await shield?.child.stop()
  if (selected('frontend')) {
    if (schedule.spareMs('frontend') < schedule.estimateMs('frontend')) recorder.skip('frontend', 'not enough time left before BENCH_MAX_SECONDS')
    else await frontendScenario(ctx, pinning)
  }
  if (selected('flood')) await floodPhase(ctx)
  if (selected('purge')) {
    if (schedule.spareMs('purge') < schedule.estimateMs('purge')) recorder.skip('purge', 'not enough time left before BENCH_MAX_SECONDS')
    else await purgeScenario(ctx, config.purgeEdits)
  }
  if (selected('sync-cost')) {
    if (schedule.spareMs('sync-cost') < schedule.estimateMs('sync-cost') / 2) recorder.skip('sync-cost', 'not enough time left before BENCH_MAX_SECONDS')
    else await syncCostScenario(ctx)
  }
  // Last: it stops the fake CMS to start an instance from Redis alone.
  if (selected('edits')) {
    if (schedule.spareMs('edits') < schedule.estimateMs('edits')) recorder.skip('edits', 'not enough time left before BENCH_MAX_SECONDS')
    else await editsScenario(ctx, config.edits)
  }
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
