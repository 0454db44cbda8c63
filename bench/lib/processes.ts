/**
 * Child processes of the benchmark: spawned with a clean environment, loopback only, each one
 * remembered so that every exit path (normal end, error, SIGINT, the global deadline) kills them.
 * Also reads CPU time and memory of a process from /proc, for the harness checks.
 * @module
 */
import { execFileSync, spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'

/** Lines kept of each child's output, for error messages. */
const TAIL_LINES = 40

const children = new Set<BenchChild>()

export interface SpawnOptions {
  /** Environment on top of PATH/HOME/LANG only: nothing else of the orchestrator's environment leaks in (no REDIS_URL, no NODE_OPTIONS). */
  env: Record<string, string>
  /** Send stdout to this file instead of a pipe (cms-shield's request log must not cost the harness anything). */
  stdoutFile?: string
  /** Run on this CPU only (`taskset -c`), every thread of it; see {@link cpuPinning}. */
  cpu?: number
  /**
   * Start at this niceness (`nice -n`, inherited by every thread), so that a load-generating
   * child yields the harness's core to the clients whose latency is measured.
   */
  niceness?: number
}

export class BenchChild {
  readonly process: ChildProcess
  readonly pid: number
  private readonly tail: string[] = []
  private readonly waiters = new Set<{ pattern: RegExp; resolve: (match: RegExpExecArray) => void }>()
  private partial = ''
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined
  private stopping = false
  private readonly exited: Promise<void>

  constructor(
    readonly name: string,
    args: readonly string[],
    options: SpawnOptions,
  ) {
    const env: Record<string, string> = {}
    for (const key of ['PATH', 'HOME', 'LANG', 'TMPDIR'] as const) {
      const value = process.env[key]
      if (value !== undefined) env[key] = value
    }
    Object.assign(env, options.env)
    const stdoutFd = options.stdoutFile === undefined ? undefined : openSync(options.stdoutFile, 'a')
    // taskset execs node in its own process, so the pid (and /proc) is node's.
    let [command, argv]: [string, string[]] = options.cpu === undefined ? [process.execPath, [...args]] : ['taskset', ['-c', String(options.cpu), process.execPath, ...args]]
    // nice execs its command too, so the pid stays node's.
    if (options.niceness !== undefined) [command, argv] = ['nice', ['-n', String(options.niceness), command, ...argv]]
    this.process = spawn(command, argv, {
      env,
      stdio: ['pipe', stdoutFd ?? 'pipe', 'pipe'],
      cwd: process.cwd(),
    })
    if (stdoutFd !== undefined) closeSync(stdoutFd)
    if (this.process.pid === undefined) throw new Error(`could not start ${name}`)
    this.pid = this.process.pid
    children.add(this)
    this.process.stdout?.setEncoding('utf8').on('data', (chunk: string) => this.onOutput(chunk))
    this.process.stderr?.setEncoding('utf8').on('data', (chunk: string) => this.onOutput(chunk))
    // A child that dies must not take the orchestrator with it through EPIPE on stdin.
    this.process.stdin?.on('error', () => undefined)
    this.exited = new Promise((resolve) => {
      this.process.once('exit', (code, signal) => {
        this.exitInfo = { code, signal }
        children.delete(this)
        if (!this.stopping) {
          process.stdout.write(`WARNING: ${this.name} (pid ${this.pid}) exited unexpectedly: code ${code}, signal ${signal}\n--- last output ---\n${this.output()}\n---\n`)
        }
        resolve()
      })
    })
  }

  get alive(): boolean {
    return this.exitInfo === undefined
  }

  /** The last lines the child printed (stdout when piped, and stderr). */
  output(): string {
    return [...this.tail, this.partial].filter((line) => line !== '').join('\n')
  }

  private onOutput(chunk: string): void {
    const lines = (this.partial + chunk).split('\n')
    this.partial = lines.pop() ?? ''
    for (const line of lines) {
      this.tail.push(line)
      if (this.tail.length > TAIL_LINES) this.tail.shift()
      for (const waiter of this.waiters) {
        const match = waiter.pattern.exec(line)
        if (match) {
          this.waiters.delete(waiter)
          waiter.resolve(match)
        }
      }
    }
  }

  /** Resolves with the first line (from now on) that matches; rejects on timeout or exit. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const waiter = {
        pattern,
        resolve: (match: RegExpExecArray) => {
          clearTimeout(timer)
          this.process.off('exit', onExit)
          resolve(match)
        },
      }
      const fail = (why: string): void => {
        this.waiters.delete(waiter)
        this.process.off('exit', onExit)
        reject(new Error(`${this.name}: ${why} waiting for ${pattern}\n--- last output ---\n${this.output()}`))
      }
      const timer = setTimeout(() => fail(`no such line within ${timeoutMs} ms`), timeoutMs)
      const onExit = (): void => {
        clearTimeout(timer)
        fail(`exited (${JSON.stringify(this.exitInfo)})`)
      }
      if (!this.alive) {
        clearTimeout(timer)
        fail('already exited')
        return
      }
      this.waiters.add(waiter)
      this.process.once('exit', onExit)
    })
  }

  markStopping(): void {
    this.stopping = true
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.process.kill(signal)
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 3_000): Promise<void> {
    this.stopping = true
    if (!this.alive) return
    this.process.kill('SIGTERM')
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs)
    await this.exited
    clearTimeout(timer)
  }
}

/** Stops every child still running, each by its own pid. */
export async function stopAllChildren(graceMs = 3_000): Promise<void> {
  await Promise.all([...children].map((child) => child.stop(graceMs)))
}

/** Synchronous last resort (the `exit` event): SIGKILL every child still running. */
export function killAllChildrenNow(): void {
  for (const child of children) {
    child.markStopping()
    try {
      child.process.kill('SIGKILL')
    } catch {
      // already gone
    }
  }
}

export function runningChildren(): BenchChild[] {
  return [...children]
}

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on every Linux this runs on). */
const CLOCK_TICKS = 100

/** User + system CPU seconds a process has used (all its threads), or undefined off Linux / once it is gone. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 2 (comm) may hold spaces; everything after its closing parenthesis is space-separated.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime are fields 14 and 15, i.e. 11 and 12 after comm and state.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return undefined
  }
}

/** Resident set size now and its peak (VmRSS, VmHWM), in bytes. */
export function processMemory(pid: number): { rss: number; peakRss: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
    return { rss: kib('VmRSS'), peakRss: kib('VmHWM') }
  } catch {
    return undefined
  }
}

/** CPU seconds the whole machine spent busy (user, nice, system), for spotting load from outside the benchmark. */
export function machineBusySeconds(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
    const [, user, nice, system] = line.trim().split(/\s+/).map(Number)
    if (user === undefined || nice === undefined || system === undefined) return undefined
    return (user + nice + system) / CLOCK_TICKS
  } catch {
    return undefined
  }
}

/**
 * Where the benchmark's processes run: the load generator on one core and the server on the
 * other, as the reference figures were measured. Unpinned, the scheduler moves a server's main
 * thread, its GC threads and the harness across both cores, and two runs of the same server differ
 * by up to a third. Pinned, the harness (autocannon, in this process) and the fake CMS share CPU 0 and
 * every measured server (cms-shield and both baselines) gets CPU 1 to itself, one at a time.
 */
export interface CpuPinning {
  readonly harness: number
  readonly server: number
}

/** `mode` is BENCH_PIN: `auto` pins when there are 2+ CPUs and `taskset` runs; `off` never does. */
export function cpuPinning(mode: 'auto' | 'off', cpuCount: number): CpuPinning | undefined {
  if (mode === 'off' || cpuCount < 2) return undefined
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' })
  } catch {
    return undefined
  }
  return { harness: 0, server: cpuCount - 1 }
}

/** Moves every thread of this process (the harness) onto `cpu`; threads started later inherit it. */
export function pinSelf(cpu: number): void {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' })
}
