/**
 * One CMS request per key across every instance sharing Redis. The first instance to take a short
 * lock (`SET … NX PX`) asks the CMS and stores the answer; the others wait for its message on a
 * pub/sub channel and then read the stored answer. Waiters are woken the moment the answer is
 * stored: no polling (nginx's cache lock polls every 500 ms, which is what this avoids). If Redis
 * fails, or the holder does not publish within the lock time, a waiter asks the CMS itself: the
 * lock only saves load, it never blocks an answer. Nor does a waiter wait when no message could
 * reach it: not at all while the channel is not subscribed yet, and no longer once the subscriber
 * connection drops.
 * @module
 */
import { randomUUID } from 'node:crypto'
import { boundedCommand } from './stores/bounded-command.js'
import { subscribeUntilDone } from './stores/subscribe-until-done.js'

export interface SharedFlightRedis {
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<'OK' | null>
  publish(channel: string, message: string): Promise<number>
  del(key: string): Promise<number>
}

export interface SharedFlightSubscriber {
  subscribe(channel: string): Promise<unknown>
  on(event: 'message', listener: (channel: string, message: string) => void): unknown
  /** The connection dropped (ioredis' `close`): messages sent until it is back are lost. */
  on(event: 'close', listener: () => void): unknown
  /** The connection takes commands (ioredis' `ready`): a pending subscription is sent at once. */
  on(event: 'ready', listener: () => void): unknown
}

export interface SharedFlightOptions {
  readonly redis: SharedFlightRedis
  readonly subscriber: SharedFlightSubscriber
  /** Keys and the channel are put under it (`REDIS_PREFIX`). */
  readonly prefix: string
  /** Longest a holder may take; waiters give up waiting after it (the CMS request timeout is a good value). */
  readonly lockMs: number
  readonly commandTimeoutMs: number
}

export interface SharedFlight {
  /**
   * Runs `work` if this instance wins the key's lock (or Redis cannot say); otherwise waits for the
   * winner and returns `readStored()`, falling back to `work` when that finds nothing.
   */
  run<T>(key: string, work: () => Promise<T>, readStored: () => Promise<T | undefined>): Promise<T>
  /** Resolves once the subscription is in place (while Redis is down, that waits: bound it). */
  ready(): Promise<void>
  /** Stops retrying the subscription and wakes every waiter (each then asks the CMS itself). */
  close(): void
}

export function createSharedFlight(options: SharedFlightOptions): SharedFlight {
  const channel = `${options.prefix}filled`
  const waiters = new Map<string, Set<() => void>>()
  // Retried until it holds: with no offline queue, a SUBSCRIBE sent while the connection is still
  // connecting (as it is when the app is built) fails at once and would never be sent again.
  const subscription = subscribeUntilDone(options.subscriber, channel, {
    commandTimeoutMs: options.commandTimeoutMs,
    onReady: (listener) => void options.subscriber.on('ready', listener),
  })
  options.subscriber.on('close', () => wakeAll())
  options.subscriber.on('message', (from, key) => {
    if (from !== channel) return
    const wake = waiters.get(key)
    if (!wake) return
    waiters.delete(key)
    for (const resolve of wake) resolve()
  })

  function wakeAll(): void {
    const all = [...waiters.values()]
    waiters.clear()
    for (const wake of all) for (const resolve of wake) resolve()
  }

  /** Resolves when the key's holder publishes, or after the lock time; `cancel` stops waiting. */
  function waitFor(key: string): { woken: Promise<void>; cancel: () => void } {
    let cancel = () => {}
    const woken = new Promise<void>((resolve) => {
      let set = waiters.get(key)
      if (!set) waiters.set(key, (set = new Set()))
      const done = () => {
        clearTimeout(timer)
        set!.delete(done)
        if (set!.size === 0 && waiters.get(key) === set) waiters.delete(key)
        resolve()
      }
      const timer = setTimeout(done, options.lockMs)
      set.add(done)
      cancel = done
    })
    return { woken, cancel }
  }

  return {
    async run(key, work, readStored) {
      const lockKey = `${options.prefix}lock:${key}`
      const token = randomUUID()
      // Redis failing or slow cannot say who holds the lock: this instance asks the CMS itself.
      const taken = await boundedCommand('set lock', () => options.redis.set(lockKey, token, 'PX', options.lockMs, 'NX'), options.commandTimeoutMs).catch(
        () => 'OK' as const,
      )
      if (taken === 'OK') {
        try {
          return await work()
        } finally {
          // Wake the waiters whether the work succeeded (they read the answer) or not (they try themselves).
          void boundedCommand('publish filled', () => options.redis.publish(channel, key), options.commandTimeoutMs).catch(() => 0)
          void boundedCommand('del lock', () => options.redis.del(lockKey), options.commandTimeoutMs).catch(() => 0)
        }
      }
      // Nobody could wake this instance: rather than wait out the lock, ask the CMS now.
      if (!subscription.subscribed) return (await readStored()) ?? work()
      // Subscribe before re-checking, so a message sent in between is not missed.
      const wait = waitFor(key)
      const already = await readStored()
      if (already !== undefined) {
        wait.cancel()
        return already
      }
      await wait.woken
      return (await readStored()) ?? work()
    },
    ready: () => subscription.done,
    close() {
      subscription.cancel()
      wakeAll()
    },
  }
}
