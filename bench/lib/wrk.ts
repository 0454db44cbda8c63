/**
 * One load run with wrk (C, one thread, pipelining 1), pinned to the harness's core, against one
 * target pinned to the other: the figure is the target's CPU time per request (utime + stime from
 * /proc/<pid>/stat over the run, divided by the requests wrk completed), which other work on a shared
 * machine disturbs far less than its rate. wrk is a separate program: `apt-get install -y wrk`.
 * See bench/README.md, "The `wrk` scenario".
 * @module
 */
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { benchmarkCpuSeconds, type LoadTarget } from './load.js'
import { machineBusySeconds, processCpuSeconds } from './processes.js'
import { round } from './stats.js'

export interface WrkSpec {
  /** One path, or several: each request then picks one at random (through a Lua script of wrk's). */
  path: string | readonly string[]
  headers?: Record<string, string>
  connections: number
  durationS: number
  /** The harness's CPU (`taskset -c`); undefined: unpinned. */
  cpu: number | undefined
}

export interface WrkSample {
  target: string
  requests: number
  rps: number
  /** wrk's own latency percentiles, ms. */
  p50Ms: number
  p99Ms: number
  /** The slowest answer, ms. */
  maxMs: number
  /** Answers outside 2xx/3xx, and socket errors (connect, read, write, timeout). */
  bad: number
  errors: number
  /** The target's CPU seconds over the run; null when /proc cannot tell. */
  serverCpuS: number | null
  serverCpuUsPerRequest: number | null
  serverCores: number | null
  /** CPU cores used on the machine by anything but this benchmark and wrk. */
  foreignCores: number | null
}

/** Whether wrk runs here; the scenario is skipped (and says how to install it) otherwise. */
export function wrkAvailable(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' })
    return true
  } catch (error) {
    // wrk --version prints its banner and exits 1; only a missing binary is ENOENT.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 }

function durationMs(text: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text ?? '')
  return match ? Number(match[1]) * (UNIT_MS[match[2] as string] ?? Number.NaN) : Number.NaN
}

/** The figures wrk 4.x prints with `--latency`. */
export function parseWrkOutput(output: string): Pick<WrkSample, 'requests' | 'rps' | 'p50Ms' | 'p99Ms' | 'maxMs' | 'bad' | 'errors'> {
  const requests = /(\d+) requests in /.exec(output)
  if (!requests) throw new Error(`wrk: no request count in its output:\n${output}`)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  return {
    requests: Number(requests[1]),
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? Number.NaN),
    p50Ms: durationMs(/^\s+50%\s+(\S+)/m.exec(output)?.[1]),
    p99Ms: durationMs(/^\s+99%\s+(\S+)/m.exec(output)?.[1]),
    // The thread statistics line: `Latency  avg  stdev  max  +/- stdev`.
    maxMs: durationMs(/^\s+Latency\s+\S+\s+\S+\s+(\S+)/m.exec(output)?.[1]),
    bad: Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0),
    errors: socket ? socket.slice(1).reduce((sum, each) => sum + Number(each), 0) : 0,
  }
}

/** Server CPU microseconds per request over `samples` (sums of both), NaN when /proc could not tell. */
export function cpuPerRequestUs(samples: readonly WrkSample[]): number {
  const requests = samples.reduce((sum, sample) => sum + sample.requests, 0)
  const cpu = samples.reduce((sum, sample) => sum + (sample.serverCpuS ?? Number.NaN), 0)
  return requests === 0 ? Number.NaN : (cpu * 1e6) / requests
}

/**
 * Estimated length of a wrk scenario, for the schedule: `targets` per row (each warmed up, then
 * measured twice a round), plus `extraMs` of its own (starting processes).
 */
export function wrkEstimateMs(config: { durationS: number; rounds: number; warmupS: number }, targets: readonly number[], extraMs = 15_000): number {
  const perTarget = 2 * config.rounds * (config.durationS + 0.3) + Math.max(config.warmupS, 1)
  return targets.reduce((sum, n) => sum + n * perTarget, 0) * 1000 + extraMs
}

/**
 * A wrk script whose every request asks for one of `paths` at random. Lua long brackets hold
 * each path verbatim; a path holding `]]` is refused rather than escaped.
 */
export function randomPathsScript(paths: readonly string[]): string {
  if (paths.length === 0) throw new Error('wrk: no path')
  const bad = paths.find((path) => path.includes(']]') || /[\r\n]/.test(path))
  if (bad !== undefined) throw new Error(`wrk: cannot script the path ${JSON.stringify(bad)}`)
  return [
    'local paths = {',
    ...paths.map((path) => `  [[${path}]],`),
    '}',
    'local count = #paths',
    'request = function()',
    '  return wrk.format(nil, paths[math.random(count)])',
    'end',
    '',
  ].join('\n')
}

export async function runWrk(target: LoadTarget, spec: WrkSpec): Promise<WrkSample> {
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.durationS}s`, '--latency', '--timeout', '10s']
  for (const [name, value] of Object.entries(spec.headers ?? {})) args.push('-H', `${name}: ${value}`)
  const paths = typeof spec.path === 'string' ? [spec.path] : spec.path
  const scriptDir = paths.length > 1 ? mkdtempSync(join(tmpdir(), 'cms-shield-wrk-')) : undefined
  try {
    if (scriptDir !== undefined) {
      writeFileSync(join(scriptDir, 'paths.lua'), randomPathsScript(paths))
      args.push('-s', join(scriptDir, 'paths.lua'))
    }
    args.push(`${target.origin}${paths[0]}`)
    return await measure(target, spec, args)
  } finally {
    if (scriptDir !== undefined) rmSync(scriptDir, { recursive: true, force: true })
  }
}

async function measure(target: LoadTarget, spec: WrkSpec, args: string[]): Promise<WrkSample> {
  const [command, argv] = spec.cpu === undefined ? ['wrk', args] : ['taskset', ['-c', String(spec.cpu), 'wrk', ...args]]
  const server0 = processCpuSeconds(target.pid)
  const machine0 = machineBusySeconds()
  const bench0 = benchmarkCpuSeconds()
  const wall0 = performance.now()
  let wrkCpuS = 0
  const output = await new Promise<string>((resolve, reject) => {
    const child = execFile(command, argv, { timeout: (spec.durationS + 20) * 1000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`wrk: ${error.message}\n${stderr}`))
      else resolve(stdout)
    })
    // wrk's own CPU is the benchmark's, not foreign: read it just before it exits.
    const pid = child.pid
    const poll = setInterval(() => {
      const cpu = pid === undefined ? undefined : processCpuSeconds(pid)
      if (cpu !== undefined) wrkCpuS = Math.max(wrkCpuS, cpu)
    }, 200)
    child.once('exit', () => clearInterval(poll))
  })
  const wallS = (performance.now() - wall0) / 1000
  const server1 = processCpuSeconds(target.pid)
  const machine1 = machineBusySeconds()
  const bench1 = benchmarkCpuSeconds()
  const parsed = parseWrkOutput(output)
  const serverCpuS = server0 === undefined || server1 === undefined ? null : round(server1 - server0, 2)
  return {
    target: target.name,
    ...parsed,
    serverCpuS,
    serverCpuUsPerRequest: serverCpuS === null || parsed.requests === 0 ? null : round((serverCpuS * 1e6) / parsed.requests, 2),
    serverCores: serverCpuS === null ? null : round(serverCpuS / wallS, 3),
    foreignCores: machine0 === undefined || machine1 === undefined
      ? null
      : round(Math.max(0, machine1 - machine0 - (bench1 - bench0) - wrkCpuS) / wallS, 3),
  }
}
