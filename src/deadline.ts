/**
 * The one way cms-shield bounds a wait on something outside the process: a Redis command (through
 * `cache/stores/bounded-command.ts`), a snapshot store's read, Redis becoming ready. A hung server
 * or disk then costs a request, a lease tick or a start at most its deadline.
 *
 * Why a helper and not `AbortSignal.timeout`: ioredis takes no signal, so a signal would still
 * need a race here; and the leader lease runs its deadlines on the timers it is given, which its
 * tests advance by hand. Why also around Redis commands, when `redis-client.ts` sets ioredis'
 * `commandTimeout`: the stores accept any client with the few commands they send (a fake, or a
 * client built elsewhere with no timeout or an offline queue), and promise an answer within their
 * own `commandTimeoutMs` whatever it does. ioredis' option stays for the commands ioredis sends
 * by itself (the ready check, AUTH, SELECT, re-subscribing after a reconnect), which no caller sees.
 * @module
 */
import { realTimers, type Timers } from './timers.js'

/** Rejected with when a wait passes its deadline. */
export class TimeoutError extends Error {
  override readonly name: string = 'TimeoutError'
  readonly code: string = 'TIMEOUT'
}


export interface DeadlineOptions {
  /** What to reject with at the deadline; by default a {@link TimeoutError} naming `what`. */
  readonly timeoutError?: () => Error
  /** Default: Node's, unref'd: a deadline alone never keeps the process up; the work it bounds holds what it needs. */
  readonly timers?: Timers
}

/**
 * Settles as `work()` does, or rejects after `timeoutMs` whatever the work does. The work's own
 * later rejection is still handled here, so abandoned work never becomes an unhandled rejection;
 * work that throws synchronously rejects at once.
 */
export function settleWithin<T>(what: string, work: () => Promise<T>, timeoutMs: number, options: DeadlineOptions = {}): Promise<T> {
  const timers = options.timers ?? realTimers
  const timeoutError = options.timeoutError ?? (() => new TimeoutError(`${what} did not settle within ${timeoutMs}ms`))
  return new Promise<T>((resolve, reject) => {
    const handle = timers.setTimeout(() => reject(timeoutError()), timeoutMs)
    let pending: Promise<T>
    try {
      pending = work()
    } catch (error) {
      pending = Promise.reject(error)
    }
    pending.then(
      (value) => {
        timers.clearTimeout(handle)
        resolve(value)
      },
      (error: unknown) => {
        timers.clearTimeout(handle)
        reject(error instanceof Error ? error : new Error(String(error)))
      },
    )
  })
}
