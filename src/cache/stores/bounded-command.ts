/**
 * Every Redis call cms-shield makes is bounded by a local timer (`REDIS_COMMAND_TIMEOUT`), on top
 * of ioredis' own: a hung or paused server must cost a request, a lease tick or a broadcast at
 * most that long (docs/architecture.md#decisions: Redis is a shared tier, not a requirement).
 * @module
 */

/** Rejected with when a Redis call has not answered in time. */
export class RedisCommandTimeoutError extends Error {
  override readonly name = 'RedisCommandTimeoutError'
  readonly code = 'REDIS_COMMAND_TIMEOUT'
  constructor(operation: string, timeoutMs: number) {
    super(`redis ${operation} did not answer within ${timeoutMs}ms`)
  }
}

export interface CommandTimers {
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

const realTimers: CommandTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

/**
 * Settles with the command, or rejects after `timeoutMs` whatever the client does. The command's
 * own later rejection is still handled here, so an abandoned command never becomes an unhandled
 * rejection; a command that throws synchronously rejects at once.
 */
export function boundedCommand<T>(operation: string, command: () => Promise<T>, timeoutMs: number, timers: CommandTimers = realTimers): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const handle = timers.setTimeout(() => reject(new RedisCommandTimeoutError(operation, timeoutMs)), timeoutMs)
    let pending: Promise<T>
    try {
      pending = command()
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
