/**
 * Servers the tests run as child processes (Redis, Varnish): started, waited for until they
 * answer, stopped, and SIGKILLed when the test process exits whatever the tests did, since an
 * orphaned server would hold its port and memory after the run. On SIGINT/SIGTERM/SIGHUP the
 * default handling is restored afterwards unless someone else (the test runner) handles the signal.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export interface ChildServerOptions {
  readonly binary: string
  readonly args: readonly string[]
  /** How errors name it: `redis-server on port 1234`. */
  readonly name: string
  /** Whether it answers yet; polled until it does. */
  readonly ready: () => Promise<boolean>
  readonly deadlineMs: number
  /** The error to throw when the binary does not exist (how to install it). */
  readonly missing: () => Error
}

/** Starts the server and resolves once `ready` holds; throws with the server's last output when it exits or never answers. */
export async function startChildServer(options: ChildServerOptions): Promise<ChildProcess> {
  const child = spawn(options.binary, options.args, { stdio: ['ignore', 'pipe', 'pipe'] })
  killOnExit(child)
  let output = ''
  const keep = (chunk: Buffer) => void (output = (output + chunk.toString('utf8')).slice(-6000))
  // A forgotten server must not keep the test process alive; the exit hook kills it.
  child.unref()
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', keep)
    if (stream instanceof Socket) stream.unref()
  }
  let failure: Error | undefined
  child.on('error', (error: NodeJS.ErrnoException) => void (failure = error.code === 'ENOENT' ? options.missing() : error))
  child.on('exit', () => void (failure ??= new Error(`${options.name} exited during startup:\n${output}`)))
  const deadline = performance.now() + options.deadlineMs
  while (performance.now() < deadline) {
    if (failure) throw failure
    if (await options.ready()) return child
    await sleep(20)
  }
  child.kill('SIGKILL')
  throw new Error(`${options.name} did not answer within ${options.deadlineMs} ms:\n${output}`)
}

/** Sends `signal` and waits for the exit; anything but SIGKILL is followed by a SIGKILL after 3 s. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill(signal)
  if (signal === 'SIGKILL') {
    await exited
    return
  }
  child.kill('SIGCONT') // a paused server handles SIGTERM only once it runs again
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
  await exited.finally(() => clearTimeout(timer))
}

const children = new Set<ChildProcess>()
let registered = false

function killOnExit(child: ChildProcess): void {
  if (!registered) {
    registered = true
    const killAll = () => {
      for (const running of children) running.kill('SIGKILL')
      children.clear()
    }
    process.on('exit', killAll)
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(signal, () => {
        killAll()
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
      })
    }
  }
  children.add(child)
  child.once('exit', () => children.delete(child))
}
