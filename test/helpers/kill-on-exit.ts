/**
 * Child servers a test process started (Redis, Varnish) are SIGKILLed when the process exits,
 * whatever the tests did: an orphaned server would hold its port and memory after the run. On
 * SIGINT/SIGTERM/SIGHUP the default handling is restored afterwards unless someone else (the test
 * runner) handles the signal.
 */
import type { ChildProcess } from 'node:child_process'

const children = new Set<ChildProcess>()
let registered = false

/** Kills `child` at process exit unless it has exited by then. */
export function killOnExit(child: ChildProcess): void {
  register()
  children.add(child)
  child.once('exit', () => children.delete(child))
}

function register(): void {
  if (registered) return
  registered = true
  const killAll = () => {
    for (const child of children) child.kill('SIGKILL')
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
