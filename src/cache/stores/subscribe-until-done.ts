/**
 * Subscribing a pub/sub channel on a connection that has no offline queue (redis-client.ts): a
 * SUBSCRIBE sent before the connection is ready — at start, when the client is still connecting,
 * or while Redis is down — fails at once, and ioredis re-subscribes after a reconnect only the
 * channels it had subscribed. A subscription is therefore retried in the background, each
 * attempt bounded by the command timeout, until it holds (or is cancelled): at once when the
 * connection reports `ready`, else after a growing delay.
 *
 * No SUBSCRIBE is sent while the connection says it is not ready (`status`): at start the
 * connection is always still connecting, and a command sent then fails for that reason alone.
 * Waiting for `ready` instead keeps a healthy start free of failures, so that `onFailure` hears
 * only of attempts Redis itself refused or left unanswered.
 * @module
 */
import { boundedCommand } from './bounded-command.js'

export interface Subscribable {
  subscribe(channel: string): Promise<unknown>
  /** ioredis' connection status (`ready` when commands can be sent); absent: always try. */
  readonly status?: string
}

export interface SubscribeOptions {
  readonly commandTimeoutMs: number
  /**
   * Called after every failed attempt, `failures` counting from 1 (callers log the first only).
   * Attempts are sent only on a ready connection: a failure is Redis refusing or not answering.
   */
  readonly onFailure?: (error: unknown, failures: number) => void
  /** Registers a listener for the connection turning usable (ioredis' `ready`): a waiting retry then goes at once. */
  readonly onReady?: (listener: () => void) => void
}

export interface Subscription {
  /** Resolves once subscribed; never rejects, and stays pending when cancelled first. */
  readonly done: Promise<void>
  /** True once a SUBSCRIBE succeeded. */
  readonly subscribed: boolean
  /** Stops retrying (an attempt in flight may still succeed; nothing is unsubscribed). */
  cancel(): void
}

/** Delay before the next attempt after `failures` failures: 200 ms more each time, at most 2 s. */
export function resubscribeDelayMs(failures: number): number {
  return Math.min(Math.max(failures, 1) * 200, 2000)
}

export function subscribeUntilDone(subscriber: Subscribable, channel: string, options: SubscribeOptions): Subscription {
  let subscribed = false
  let cancelled = false
  let timer: NodeJS.Timeout | undefined
  let failures = 0
  /** Checks made while the connection was not ready yet (the waits between them grow as after failures). */
  let waits = 0
  const done = new Promise<void>((resolve) => {
    const attempt = () => {
      timer = undefined
      if (cancelled || subscribed) return
      if (subscriber.status !== undefined && subscriber.status !== 'ready') {
        // `ready` (onReady) ends the wait at once; the timer covers a caller that gave no onReady.
        waits += 1
        timer = setTimeout(attempt, resubscribeDelayMs(waits)).unref()
        return
      }
      boundedCommand(`subscribe ${channel}`, () => subscriber.subscribe(channel), options.commandTimeoutMs).then(
        () => {
          subscribed = true
          resolve()
        },
        (error: unknown) => {
          if (cancelled || subscribed) return
          failures += 1
          options.onFailure?.(error, failures)
          // Unref'd: a Redis that never comes up must not keep the process alive.
          timer = setTimeout(attempt, resubscribeDelayMs(failures)).unref()
        },
      )
    }
    // A retry waiting for its delay goes now: the connection has just become usable.
    options.onReady?.(() => {
      if (timer === undefined) return
      clearTimeout(timer)
      attempt()
    })
    attempt()
  })
  return {
    done,
    get subscribed() {
      return subscribed
    },
    cancel() {
      cancelled = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
    },
  }
}
