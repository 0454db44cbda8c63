/**
 * A Redis call cms-shield makes, bounded by `REDIS_COMMAND_TIMEOUT` through the app's one
 * deadline (`deadline.ts`, which says why ioredis' own `commandTimeout` is not enough here): a
 * hung or paused server must cost a request, a lease tick or a broadcast at most that long.
 * @module
 */
import { settleWithin, TimeoutError } from '../../deadline.js'
import type { Timers } from '../../timers.js'

/** Rejected with when a Redis call has not answered in time. */
export class RedisCommandTimeoutError extends TimeoutError {
  override readonly name = 'RedisCommandTimeoutError'
  override readonly code = 'REDIS_COMMAND_TIMEOUT'
  constructor(operation: string, timeoutMs: number) {
    super(`redis ${operation} did not answer within ${timeoutMs}ms`)
  }
}

/** Settles with the command, or rejects with a {@link RedisCommandTimeoutError} after `timeoutMs`. */
export function boundedCommand<T>(operation: string, command: () => Promise<T>, timeoutMs: number, timers?: Timers): Promise<T> {
  return settleWithin(operation, command, timeoutMs, {
    timeoutError: () => new RedisCommandTimeoutError(operation, timeoutMs),
    ...(timers === undefined ? {} : { timers }),
  })
}
