/**
 * The cross-instance single flight when Redis is not all there: it subscribes even when built
 * before its connection is ready (as the app builds it), and a waiter never waits out the lock
 * when no message could wake it — not subscribed, or the subscriber connection dropped — but asks
 * the CMS itself (the lock only saves load, it never blocks an answer).
 */
import { EventEmitter } from 'node:events'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { sharedRedisUrl } from '../../test/helpers/redis-server.js'
import { createSharedFlight, type SharedFlight, type SharedFlightRedis, type SharedFlightSubscriber } from './shared-flight.js'
import { createRedisClient, isRedisUp, type RedisClient } from './stores/redis-client.js'

const COMMAND_TIMEOUT_MS = 100
/** Long enough that a waiter which waits it out fails every latency bound below. */
const LOCK_MS = 10_000

const clients: RedisClient[] = []
const flights: SharedFlight[] = []
afterEach(() => {
  for (const flight of flights.splice(0)) flight.close()
  for (const client of clients.splice(0)) client.disconnect()
})

function flightOn(redis: SharedFlightRedis, subscriber: SharedFlightSubscriber, prefix: string): SharedFlight {
  const flight = createSharedFlight({ redis, subscriber, prefix, lockMs: LOCK_MS, commandTimeoutMs: COMMAND_TIMEOUT_MS })
  flights.push(flight)
  return flight
}

/** Another instance holds every lock: SET NX answers null. */
const lockHeldElsewhere: SharedFlightRedis = { set: async () => null, publish: async () => 0, del: async () => 0 }

/** A subscriber driven by hand: `subscribe` answers as `accept` says; `drop()` emits `close`, `ready()` `ready`. */
/** A flight whose subscriber refuses until `accept` is set; `subscribed` once it is ready. */
function subscribingFlight() {
  const subscribing = { accept: false, subscribed: false, hand: undefined as unknown as ReturnType<typeof handSubscriber> }
  subscribing.hand = handSubscriber(() => subscribing.accept)
  void flightOn(lockHeldElsewhere, subscribing.hand.subscriber, 'p:').ready().then(() => (subscribing.subscribed = true))
  return subscribing
}

function handSubscriber(accept: () => boolean) {
  const emitter = new EventEmitter()
  let attempts = 0
  const subscriber: SharedFlightSubscriber = {
    subscribe: async () => {
      attempts++
      if (!accept()) throw new Error("Stream isn't writeable and enableOfflineQueue options is false")
      return 1
    },
    on: (event: string, listener: (...args: never[]) => void) => emitter.on(event, listener as (...args: unknown[]) => void),
  }
  return { subscriber, attempts: () => attempts, drop: () => emitter.emit('close'), ready: () => emitter.emit('ready') }
}

async function timed<T>(work: Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now()
  const result = await work
  return { result, ms: performance.now() - started }
}

describe('shared flight subscription', () => {
  it('subscribes although its connection is still connecting when it is built, and a waiter is woken by the holder', async () => {
    const url = await sharedRedisUrl()
    const prefix = `flight-test-${randomUUID()}:`
    const connect = () => {
      const client = createRedisClient({ url, commandTimeoutMs: COMMAND_TIMEOUT_MS, connectTimeoutMs: 1000 })
      clients.push(client)
      return client
    }
    // Built at once, as createSharedTier does: the first SUBSCRIBE is sent before the connection is ready.
    const one = flightOn(connect(), connect(), prefix)
    const two = flightOn(connect(), connect(), prefix)
    await Promise.race([Promise.all([one.ready(), two.ready()]), sleep(5000).then(() => Promise.reject(new Error('not subscribed within 5 s')))])
    // The lock's SET NX goes over the command connections: they must be up too.
    for (let i = 0; i < 500 && !clients.every(isRedisUp); i++) await sleep(10)

    let stored: string | undefined
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let holding = false
    const holder = one.run('k', async () => {
      holding = true
      await released
      return (stored = 'from the holder')
    }, async () => stored)
    for (let i = 0; i < 200 && !holding; i++) await sleep(10)
    expect(holding).toBe(true)
    let waiterWorked = false
    const waiter = timed(two.run('k', async () => {
      waiterWorked = true
      return 'from the waiter'
    }, async () => stored))
    await sleep(50)
    release()
    expect(await holder).toBe('from the holder')
    const { result, ms } = await waiter
    expect(result).toBe('from the holder')
    expect(waiterWorked).toBe(false)
    // Woken by the holder's message, not by the 10 s lock running out.
    expect(ms).toBeLessThan(3000)
  })

  it('subscribes the moment its connection reports ready, not at the next retry', async () => {
    const subscribing = subscribingFlight()
    const { hand } = subscribing
    await sleep(20)
    expect(hand.attempts()).toBe(1)
    subscribing.accept = true
    const readyAt = performance.now()
    hand.ready()
    for (let i = 0; i < 100 && !subscribing.subscribed; i++) await sleep(2)
    expect(subscribing.subscribed).toBe(true)
    // The retry timer would have fired 200 ms after the first failure.
    expect(performance.now() - readyAt).toBeLessThan(150)
    expect(hand.attempts()).toBe(2)
  })

  it('keeps retrying a subscription that fails, and stops once closed', async () => {
    const subscribing = subscribingFlight()
    const { hand } = subscribing
    for (let i = 0; i < 100 && hand.attempts() < 2; i++) await sleep(10)
    expect(hand.attempts()).toBeGreaterThanOrEqual(2)
    expect(subscribing.subscribed).toBe(false)
    subscribing.accept = true
    for (let i = 0; i < 200 && !subscribing.subscribed; i++) await sleep(10)
    expect(subscribing.subscribed).toBe(true)

    const refused = handSubscriber(() => false)
    const closed = flightOn(lockHeldElsewhere, refused.subscriber, 'q:')
    for (let i = 0; i < 100 && refused.attempts() < 2; i++) await sleep(10)
    closed.close()
    const attemptsAtClose = refused.attempts()
    // Without close() the next attempt would come 400 ms after the second.
    await sleep(700)
    expect(refused.attempts()).toBe(attemptsAtClose)
  })
})

describe('a waiter that nothing could wake', () => {
  it('asks the CMS at once while its instance is not subscribed, instead of waiting out the lock', async () => {
    const flight = flightOn(lockHeldElsewhere, handSubscriber(() => false).subscriber, 'p:')
    const { result, ms } = await timed(flight.run('k', async () => 'asked the CMS', async () => undefined))
    expect(result).toBe('asked the CMS')
    expect(ms).toBeLessThan(1000)
  })

  it('serves what the holder stored, when it is there, even while not subscribed', async () => {
    const flight = flightOn(lockHeldElsewhere, handSubscriber(() => false).subscriber, 'p:')
    let worked = false
    const result = await flight.run('k', async () => {
      worked = true
      return 'asked the CMS'
    }, async () => 'stored by the holder')
    expect(result).toBe('stored by the holder')
    expect(worked).toBe(false)
  })

  it('stops waiting the moment the subscriber connection drops, and asks the CMS itself', async () => {
    const hand = handSubscriber(() => true)
    const flight = flightOn(lockHeldElsewhere, hand.subscriber, 'p:')
    await flight.ready()
    const waiters = [timed(flight.run('a', async () => 'a from the CMS', async () => undefined)), timed(flight.run('b', async () => 'b from the CMS', async () => undefined))]
    await sleep(50)
    hand.drop()
    const answers = await Promise.all(waiters)
    expect(answers.map((a) => a.result)).toEqual(['a from the CMS', 'b from the CMS'])
    for (const { ms } of answers) expect(ms).toBeLessThan(1000)
  })

  it('is woken by close(), so no waiter outlives a closed Redis', async () => {
    const flight = createSharedFlight({ redis: lockHeldElsewhere, subscriber: handSubscriber(() => true).subscriber, prefix: 'p:', lockMs: LOCK_MS, commandTimeoutMs: COMMAND_TIMEOUT_MS })
    await flight.ready()
    const waiter = timed(flight.run('k', async () => 'from the CMS', async () => undefined))
    await sleep(20)
    flight.close()
    const { result, ms } = await waiter
    expect(result).toBe('from the CMS')
    expect(ms).toBeLessThan(1000)
  })
})
