/**
 * cms-shield's CPU per flood query, the flood alone: no readers, no edits, nothing else asking.
 * The same flooding client as the `flood` scenario (bench/flood-client.ts: the same query mix,
 * BENCH_FLOOD_CONCURRENCY in flight from 127.0.0.2), against a fresh cms-shield with the
 * scenario's budget (FLOOD_SHIELD_ENV), the fake CMS answering in BENCH_FLOOD_LATENCY_MS.
 *
 *   npm run build && node --import tsx bench/flood-cpu.ts
 *
 * Each run: a warm-up flood (FLOOD_CPU_WARMUP seconds, not counted), then the measured one
 * (BENCH_FLOOD_SECONDS); cms-shield's utime + stime (/proc/<pid>/stat) from the client's first
 * request to its last answer, divided by the answers. FLOOD_CPU_ENTRIES (comma-separated, default
 * `dist/main.js`) names the builds, FLOOD_CPU_ORDER the runs by letter (`ABBA`: A is the first
 * entry), so that two builds are compared in one sitting. FLOOD_CPU_NODE_ARGS (space-separated)
 * go to cms-shield's node (`--cpu-prof --cpu-prof-dir=/tmp/prof`). One JSON line per run, then a
 * summary per entry. FLOOD_CPU_KEEP=1 keeps cms-shield's output (its log, `--trace-gc`'s lines). See bench/README.md, "CPU per flood query".
 * @module
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readConfig } from './lib/config.js'
import { getJson } from './lib/http.js'
import type { FloodReport } from './lib/flood-queries.js'
import { setLatency, startOrigin } from './lib/origin-control.js'
import { BenchChild, cpuPinning, processCpuSeconds, stopAllChildren } from './lib/processes.js'
import { startShield } from './lib/shield.js'
import { FLOOD_SHIELD_ENV } from './scenarios/flood.js'

const config = readConfig()
const entries = (process.env.FLOOD_CPU_ENTRIES?.trim() || 'dist/main.js').split(',').map((entry) => entry.trim())
const order = process.env.FLOOD_CPU_ORDER?.trim() || 'A'
const warmupS = Number(process.env.FLOOD_CPU_WARMUP ?? '3')
const nodeArgs = (process.env.FLOOD_CPU_NODE_ARGS?.trim() ?? '').split(/\s+/).filter((arg) => arg !== '')
const pinning = cpuPinning(config.pin, 2)
/** Seconds cms-shield is watched idle before each run's floods. */
const IDLE_S = 5

/** Clock ticks per second of /proc's times (USER_HZ: 100 on Linux). */
const TICKS = 100

/** User and system seconds of the main thread of `pid` and of its other threads. */
function threadTimes(pid: number): Map<string, { user: number; system: number }> {
  const times = new Map<string, { user: number; system: number }>()
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      // Node names none of its threads: the main thread apart, the others (GC, libuv) together.
      const name = tid === String(pid) ? 'main' : 'others'
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const sum = times.get(name) ?? { user: 0, system: 0 }
      sum.user += Number(fields[11]) / TICKS
      sum.system += Number(fields[12]) / TICKS
      times.set(name, sum)
    }
  } catch {
    // The process or a thread is gone: what was read so far.
  }
  return times
}

/** What the threads used between two readings. */
function threadDelta(before: Map<string, { user: number; system: number }>, after: Map<string, { user: number; system: number }>): Record<string, string> {
  const delta: Record<string, string> = {}
  for (const [name, used] of after) {
    const was = before.get(name) ?? { user: 0, system: 0 }
    const user = used.user - was.user
    const system = used.system - was.system
    if (user + system > 0) delta[name] = `user ${user.toFixed(2)} s, system ${system.toFixed(2)} s`
  }
  return delta
}

interface RunResult {
  entry: string
  answered: number
  seconds: number
  cpuSeconds: number
  cpuMsPerQuery: number
  cores: number
  perSecond: number
  statuses: Record<string, number>
  clientCpuSeconds: number
  p99Ms: number
  threads: Record<string, string>
  /** The threads' CPU over IDLE_S seconds before the flood. */
  idle: Record<string, string>
}

/** One flood against `target` for `seconds`; cms-shield's CPU is read around it. */
async function flood(target: string, pid: number, seconds: number, run: string, parents: string): Promise<{ report: FloodReport; cpu: number; threads: Record<string, string> }> {
  const client = new BenchChild('flood-client', ['--import', 'tsx', join('bench', 'flood-client.ts')], {
    env: {
      BENCH_FLOOD_TARGET: target,
      BENCH_FLOOD_SECONDS: String(seconds),
      BENCH_FLOOD_CONCURRENCY: String(config.flood.concurrency),
      BENCH_FLOOD_TIMEOUT_MS: String(config.flood.timeoutMs),
      BENCH_FLOOD_LOCAL_ADDRESS: '127.0.0.2',
      BENCH_FLOOD_RUN: run,
      BENCH_FLOOD_PARENTS: parents,
    },
    ...(pinning ? { cpu: pinning.harness } : {}),
  })
  client.markStopping()
  const done = client.waitForLine(/^flood-client done (\{.*\})$/, 60_000 + seconds * 1000)
  done.catch(() => undefined)
  await client.waitForLine(/^flood-client started$/, 30_000)
  const before = processCpuSeconds(pid) ?? Number.NaN
  const threadsBefore = threadTimes(pid)
  const report = JSON.parse((await done)[1] as string) as FloodReport
  const cpu = (processCpuSeconds(pid) ?? Number.NaN) - before
  const threads = threadDelta(threadsBefore, threadTimes(pid))
  await client.stop()
  return { report, cpu, threads }
}

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'cms-shield-flood-cpu-'))
  const origin = await startOrigin(config.pages, pinning)
  const site = await getJson<{ rootId: number }>(`${origin.control}/info`)
  const results: RunResult[] = []
  try {
    for (const [i, letter] of [...order].entries()) {
      const entry = entries[letter.charCodeAt(0) - 'A'.charCodeAt(0)]
      if (entry === undefined) throw new Error(`FLOOD_CPU_ORDER=${order}: no entry for ${letter}`)
      await setLatency(origin, 0)
      const shield = await startShield(
        { workDir, cpu: pinning?.server, shieldEnv: config.shieldEnv, entry, nodeArgs },
        `flood-cpu-${i}-${letter}`, origin, 'warn', 60_000, { ...FLOOD_SHIELD_ENV },
      )
      try {
        await setLatency(origin, config.flood.latencyMs)
        const run = `${Date.now().toString(36)}r${i}`
        // What cms-shield uses with nobody asking, for as long as the flood lasts: not the flood's.
        const idleBefore = threadTimes(shield.pid)
        await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000))
        const idle = threadDelta(idleBefore, threadTimes(shield.pid))
        if (warmupS > 0) await flood(shield.origin, shield.pid, warmupS, `${run}w`, String(site.rootId))
        const { report, cpu, threads } = await flood(shield.origin, shield.pid, config.flood.seconds, run, String(site.rootId))
        const seconds = report.durationMs / 1000
        const result: RunResult = {
          entry,
          answered: report.answered,
          seconds: Math.round(seconds * 10) / 10,
          cpuSeconds: Math.round(cpu * 100) / 100,
          cpuMsPerQuery: Math.round((cpu * 1e6) / report.answered) / 1000,
          cores: Math.round((cpu / seconds) * 100) / 100,
          perSecond: Math.round(report.answered / seconds),
          statuses: report.statuses,
          clientCpuSeconds: report.cpuSeconds,
          p99Ms: Math.round(report.latencyMs.p99 * 10) / 10,
          threads,
          idle,
        }
        results.push(result)
        process.stdout.write(`flood-cpu run ${i} ${letter} ${JSON.stringify(result)}\n`)
      } finally {
        await shield.child.stop()
      }
    }
  } finally {
    await stopAllChildren(2_000)
    if (process.env.FLOOD_CPU_KEEP === '1') process.stdout.write(`flood-cpu: cms-shield's output kept in ${workDir}\n`)
    else rmSync(workDir, { recursive: true, force: true })
  }
  for (const entry of entries) {
    const mine = results.filter((result) => result.entry === entry)
    const cpu = mine.reduce((sum, result) => sum + result.cpuSeconds, 0)
    const answered = mine.reduce((sum, result) => sum + result.answered, 0)
    const seconds = mine.reduce((sum, result) => sum + result.seconds, 0)
    process.stdout.write(
      `flood-cpu ${entry}: ${mine.length} run(s), ${((cpu * 1000) / answered).toFixed(3)} ms of cms-shield CPU per flood query ` +
        `(${mine.map((result) => result.cpuMsPerQuery.toFixed(3)).join(', ')}), ${Math.round(answered / seconds)} queries/s, ${(cpu / seconds).toFixed(2)} cores\n`,
    )
  }
}

await main()
process.exit(0)
