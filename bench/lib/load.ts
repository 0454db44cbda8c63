/**
 * One load run: autocannon (programmatic, in this process, pipelining 1) against one target, with
 * the checks that tell whether the number is the target's or the harness's: the orchestrator's
 * event-loop utilisation and CPU, the target process's CPU (from /proc), and CPU used on the machine
 * by anything outside the benchmark.
 * @module
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import autocannon from 'autocannon'
import { machineBusySeconds, processCpuSeconds, runningChildren } from './processes.js'
import { LatencyRecorder, round } from './stats.js'
import type { LatencySummary } from './stats.js'

export interface LoadTarget {
  /** `cms-shield`, `fastify`, `node`, … */
  name: string
  /** `http://127.0.0.1:<port>` */
  origin: string
  /** The server's pid, for its CPU time. */
  pid: number
}

export interface LoadSpec {
  /** One path, or several to pick from at random for every request. */
  paths: readonly string[]
  headers?: Record<string, string>
  connections: number
  durationS: number
  /** The status every answer should have; others are counted as unexpected. */
  expectStatus: number
}

export interface LoadSample {
  target: string
  rps: number
  requests: number
  durationS: number
  latencyMs: LatencySummary
  statuses: Record<string, number>
  unexpected: number
  errors: number
  timeouts: number
  /** Share of wall time the orchestrator's event loop was busy (1 = saturated). */
  harnessElu: number
  /** CPU cores the orchestrator used (all its threads). */
  harnessCores: number
  /** p99 event-loop delay of the orchestrator, ms. */
  harnessLoopDelayP99Ms: number
  /** CPU cores the target used; null when /proc cannot tell. */
  serverCores: number | null
  /** Target CPU microseconds per answered request. */
  serverCpuUsPerRequest: number | null
  /** CPU cores used on the machine by processes that are not this benchmark's. */
  foreignCores: number | null
}

/** The orchestrator counts as saturated past this event-loop utilisation. */
export const HARNESS_SATURATED_ELU = 0.9
/** A target counts as CPU-bound past this many cores (its main thread plus GC threads). */
export const SERVER_BOUND_CORES = 0.9
/** CPU from outside the benchmark worth a warning, in cores. */
export const FOREIGN_LOAD_CORES = 0.15

/** CPU seconds used so far by this process and every child of the benchmark still running. */
export function benchmarkCpuSeconds(): number {
  const own = process.cpuUsage()
  let total = (own.user + own.system) / 1e6
  for (const child of runningChildren()) total += processCpuSeconds(child.pid) ?? 0
  return total
}

export async function runLoad(target: LoadTarget, spec: LoadSpec): Promise<LoadSample> {
  const latencies = new LatencyRecorder()
  const loopDelay = monitorEventLoopDelay({ resolution: 10 })
  const paths = spec.paths
  if (paths.length === 0) throw new Error('runLoad: no path')
  const requests: autocannon.Request[] | undefined = paths.length === 1
    ? undefined
    : [{ setupRequest: (request) => ({ ...request, path: paths[Math.floor(Math.random() * paths.length)] as string }) }]

  const elu0 = performance.eventLoopUtilization()
  const cpu0 = process.cpuUsage()
  const server0 = processCpuSeconds(target.pid)
  const machine0 = machineBusySeconds()
  const bench0 = benchmarkCpuSeconds()
  const wall0 = performance.now()
  loopDelay.enable()

  const instance = autocannon({
    url: `${target.origin}${paths[0] as string}`,
    connections: spec.connections,
    pipelining: 1,
    duration: spec.durationS,
    timeout: 10,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(requests ? { requests } : {}),
  })
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
    latencies.add(responseTime)
  })
  // autocannon stops by itself after `duration`; this only guards against a run that never ends.
  const guard = setTimeout(() => instance.stop(), (spec.durationS + 15) * 1000)
  let result: autocannon.Result
  try {
    result = await instance
  } finally {
    clearTimeout(guard)
    loopDelay.disable()
  }

  const wallS = (performance.now() - wall0) / 1000
  const elu = performance.eventLoopUtilization(elu0)
  const cpu = process.cpuUsage(cpu0)
  const server1 = processCpuSeconds(target.pid)
  const machine1 = machineBusySeconds()
  const bench1 = benchmarkCpuSeconds()
  const serverSeconds = server0 === undefined || server1 === undefined ? undefined : server1 - server0
  const statuses: Record<string, number> = {}
  let expected = 0
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) {
    statuses[status] = count
    if (Number(status) === spec.expectStatus) expected += count
  }
  const answered = result.requests.total
  return {
    target: target.name,
    rps: round(answered / result.duration, 1),
    requests: answered,
    durationS: result.duration,
    latencyMs: roundSummary(latencies.summary()),
    statuses,
    unexpected: Object.values(statuses).reduce((sum, count) => sum + count, 0) - expected,
    errors: result.errors,
    timeouts: result.timeouts,
    harnessElu: round(elu.utilization, 3),
    harnessCores: round((cpu.user + cpu.system) / 1e6 / wallS, 3),
    harnessLoopDelayP99Ms: round(loopDelay.percentile(99) / 1e6, 1),
    serverCores: serverSeconds === undefined ? null : round(serverSeconds / wallS, 3),
    serverCpuUsPerRequest: serverSeconds === undefined || answered === 0 ? null : round((serverSeconds * 1e6) / answered, 1),
    foreignCores: machine0 === undefined || machine1 === undefined
      ? null
      : round(Math.max(0, machine1 - machine0 - (bench1 - bench0)) / wallS, 3),
  }
}

function roundSummary(summary: LatencySummary): LatencySummary {
  return {
    count: summary.count,
    mean: round(summary.mean, 3),
    min: round(summary.min, 3),
    p50: round(summary.p50, 3),
    p90: round(summary.p90, 3),
    p99: round(summary.p99, 3),
    max: round(summary.max, 3),
  }
}

/**
 * Waits, at most `maxMs`, until processes outside the benchmark use less than FOREIGN_LOAD_CORES
 * (measured over `windowMs`); returns the last measurement (null where /proc cannot tell).
 */
export async function waitForQuiet(maxMs: number, windowMs = 1_000): Promise<number | null> {
  const until = Date.now() + maxMs
  for (;;) {
    const machine0 = machineBusySeconds()
    const bench0 = benchmarkCpuSeconds()
    await new Promise((resolve) => setTimeout(resolve, windowMs))
    const machine1 = machineBusySeconds()
    const bench1 = benchmarkCpuSeconds()
    if (machine0 === undefined || machine1 === undefined) return null
    const foreign = Math.max(0, machine1 - machine0 - (bench1 - bench0)) / (windowMs / 1000)
    if (foreign < FOREIGN_LOAD_CORES || Date.now() + windowMs > until) return round(foreign, 3)
  }
}

/** Whether the harness, not the target, set the pace of this run. */
export function harnessBound(sample: LoadSample): boolean {
  return sample.harnessElu >= HARNESS_SATURATED_ELU && (sample.serverCores === null || sample.serverCores < SERVER_BOUND_CORES)
}
