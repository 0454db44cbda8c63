/**
 * The cluster channel between instances: announcements and refresh requests cross real Redis
 * connections, the last announcement is recorded for followers that missed it, anything malformed
 * on the wire is dropped with a warning, the subscriber is shared with the shared flight without
 * either disturbing the other, and a Redis that is down or hangs costs a caller at most one
 * command timeout.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ownRedisServer, sharedRedisUrl } from '../../test/helpers/redis-server.js'
import {
  createClusterChannel,
  MAX_REFRESH_IDS,
  parseRefreshMessage,
  parseSnapshotAnnouncement,
  type ClusterChannel,
  type ClusterChannelSubscriber,
  type RefreshMessage,
  type SnapshotAnnouncement,
} from './cluster-channel.js'
import { createSharedFlight } from '../cache/shared-flight.js'
import { createRedisClient, isRedisUp, type RedisClient } from '../cache/stores/redis-client.js'
import { until } from '../../test/helpers/redis-clients.js'

const COMMAND_TIMEOUT_MS = 200

function recordingLogger() {
  const warnings: Array<{ details: object; message: string }> = []
  return { warnings, warn: (details: object, message: string) => void warnings.push({ details, message }) }
}

async function timed<T>(work: Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now()
  const result = await work
  return { result, ms: performance.now() - started }
}

const clients: RedisClient[] = []
const channels: ClusterChannel[] = []
afterEach(() => {
  for (const channel of channels.splice(0)) channel.close()
  for (const client of clients.splice(0)) client.disconnect()
})

function connect(url: string): RedisClient {
  const client = createRedisClient({ url, commandTimeoutMs: COMMAND_TIMEOUT_MS, connectTimeoutMs: 1000 })
  clients.push(client)
  return client
}

const ready = (client: RedisClient) => until('redis ready', () => isRedisUp(client), 5000)

/** One instance's side of the channel: its own command and subscriber connections. */
async function instance(url: string, prefix: string) {
  const redis = connect(url)
  const subscriber = connect(url)
  await Promise.all([ready(redis), ready(subscriber)])
  const logger = recordingLogger()
  const channel = createClusterChannel({ redis, subscriber, prefix, commandTimeoutMs: COMMAND_TIMEOUT_MS, logger })
  channels.push(channel)
  const snapshots: SnapshotAnnouncement[] = []
  const refreshes: RefreshMessage[] = []
  channel.onSnapshot((a) => snapshots.push(a))
  channel.onRefresh((m) => refreshes.push(m))
  await channel.ready()
  return { redis, subscriber, logger, channel, snapshots, refreshes }
}

describe('cluster channel on a shared Redis', () => {
  let url: string
  let admin: Redis
  let prefix: string
  beforeAll(async () => {
    url = await sharedRedisUrl()
    admin = new Redis(url)
  })
  afterEach(async () => {
    await admin.del(`${prefix}snapshot:latest`)
  })
  afterAll(() => {
    admin.disconnect()
  })
  const newPrefix = () => (prefix = `test:${randomUUID()}:`)

  it('delivers announcements and refresh requests to every instance, the sender included', async () => {
    newPrefix()
    const [a, b] = await Promise.all([instance(url, prefix), instance(url, prefix)])
    const announcement = { version: 1_700_000_000_123, fingerprint: 'sha256:abc', owner: 'instance-a' }
    expect(await a.channel.announceSnapshot(announcement)).toBe(true)
    await until('announcement received', () => a.snapshots.length === 1 && b.snapshots.length === 1, 2000)
    expect(b.snapshots).toEqual([announcement])
    expect(a.snapshots).toEqual([announcement])

    const request = { ids: [3, 5, 8], listing: true, reason: 'webhook page_published', from: 'instance-b' }
    expect(await b.channel.publishRefresh(request)).toBe(2) // both subscribers
    await until('refresh received', () => a.refreshes.length === 1 && b.refreshes.length === 1, 2000)
    expect(a.refreshes).toEqual([request])
    expect(b.refreshes).toEqual([request])
    expect(await b.channel.publishRefresh({ all: true, reason: 'purge', from: 'instance-b' })).toBe(2)
    await until('second refresh received', () => a.refreshes.length === 2, 2000)
    expect(a.refreshes[1]).toEqual({ all: true, reason: 'purge', from: 'instance-b' })
    expect([...a.logger.warnings, ...b.logger.warnings]).toEqual([])
  })

  it('answers the number of receivers: 1 for a lone instance, 0 when nobody listens', async () => {
    newPrefix()
    const alone = await instance(url, prefix)
    expect(await alone.channel.publishRefresh({ reason: 'r', from: 'x' })).toBe(1)
    // A channel under another prefix whose subscriber never subscribes: nobody hears it.
    const deaf = createClusterChannel({
      redis: alone.redis,
      subscriber: { subscribe: () => new Promise(() => {}), on: () => undefined },
      prefix: `${prefix}nobody:`,
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
      logger: recordingLogger(),
    })
    channels.push(deaf)
    expect(await deaf.publishRefresh({ reason: 'r', from: 'x' })).toBe(0)
  })

  it('records the last announcement for followers that missed the message', async () => {
    newPrefix()
    const [a, b] = await Promise.all([instance(url, prefix), instance(url, prefix)])
    expect(await b.channel.latestSnapshot()).toBeUndefined()
    await a.channel.announceSnapshot({ version: 1, fingerprint: 'one', owner: 'a' })
    await a.channel.announceSnapshot({ version: 2, fingerprint: 'two', owner: 'a' })
    expect(await b.channel.latestSnapshot()).toEqual({ version: 2, fingerprint: 'two', owner: 'a' })
    expect(JSON.parse((await admin.get(`${prefix}snapshot:latest`))!)).toEqual({ version: 2, fingerprint: 'two', owner: 'a' })
    // Something else written there reads as absent, with a warning.
    await admin.set(`${prefix}snapshot:latest`, '{"version":"2"}')
    expect(await b.channel.latestSnapshot()).toBeUndefined()
    expect(b.logger.warnings.map((w) => w.message)).toEqual(['cluster channel: the recorded snapshot announcement is malformed'])
  })

  it('drops malformed messages published raw, with one warning each, and keeps delivering good ones', async () => {
    newPrefix()
    const b = await instance(url, prefix)
    const junk: Array<[string, string]> = [
      ['snapshots', '{'],
      ['snapshots', '"just a string"'],
      ['snapshots', 'null'],
      ['snapshots', '[1,2]'],
      ['snapshots', JSON.stringify({ version: -1, fingerprint: 'f', owner: 'o' })],
      ['snapshots', JSON.stringify({ version: 1.5, fingerprint: 'f', owner: 'o' })],
      ['snapshots', JSON.stringify({ version: 1, fingerprint: '', owner: 'o' })],
      ['snapshots', JSON.stringify({ version: 1, fingerprint: 'f' })],
      ['refresh', 'not json at all'],
      ['refresh', JSON.stringify({ ids: [1, 0], reason: 'r', from: 'f' })],
      ['refresh', JSON.stringify({ ids: [1, -2], reason: 'r', from: 'f' })],
      ['refresh', JSON.stringify({ ids: ['3'], reason: 'r', from: 'f' })],
      ['refresh', JSON.stringify({ ids: [2 ** 53], reason: 'r', from: 'f' })],
      ['refresh', JSON.stringify({ ids: 7, reason: 'r', from: 'f' })],
      ['refresh', JSON.stringify({ ids: Array.from({ length: MAX_REFRESH_IDS + 1 }, (_, i) => i + 1), reason: 'r', from: 'f' })],
      ['refresh', JSON.stringify({ all: 'yes', reason: 'r', from: 'f' })],
      ['refresh', JSON.stringify({ all: true, from: 'f' })],
      ['refresh', JSON.stringify({ all: true, reason: 'r', from: '' })],
      ['refresh', 'x'.repeat(300 * 1024)],
    ]
    for (const [channel, message] of junk) await admin.publish(`${prefix}${channel}`, message)
    // Pub/sub keeps order per connection: once these arrive, everything before them was handled.
    await admin.publish(`${prefix}snapshots`, JSON.stringify({ version: 9, fingerprint: 'f', owner: 'o', extra: 'ignored' }))
    await admin.publish(`${prefix}refresh`, JSON.stringify({ ids: [1, 2], reason: 'r', from: 'f', extra: { deep: true } }))
    await until('good messages received', () => b.snapshots.length === 1 && b.refreshes.length === 1, 2000)
    expect(b.snapshots).toEqual([{ version: 9, fingerprint: 'f', owner: 'o' }])
    expect(b.refreshes).toEqual([{ ids: [1, 2], reason: 'r', from: 'f' }])
    expect(b.logger.warnings).toHaveLength(junk.length)
    expect(new Set(b.logger.warnings.map((w) => w.message))).toEqual(new Set(['cluster channel: dropped a malformed message']))
  })

  it('shares its subscriber with the shared flight without either disturbing the other', async () => {
    newPrefix()
    // Instance 1: its own connections, a flight and a channel.
    const one = await instance(url, prefix)
    const flightOne = createSharedFlight({ redis: one.redis, subscriber: one.subscriber, prefix, lockMs: 10_000, commandTimeoutMs: COMMAND_TIMEOUT_MS })
    // Instance 2: the channel and the flight on ONE subscriber.
    const two = await instance(url, prefix)
    const flightTwo = createSharedFlight({ redis: two.redis, subscriber: two.subscriber, prefix, lockMs: 10_000, commandTimeoutMs: COMMAND_TIMEOUT_MS })
    await Promise.all([flightOne.ready(), flightTwo.ready()])
    const numsub = (await admin.pubsub('NUMSUB', `${prefix}filled`, `${prefix}snapshots`, `${prefix}refresh`)) as Array<string | number>
    expect(numsub.map(String)).toEqual([`${prefix}filled`, '2', `${prefix}snapshots`, '2', `${prefix}refresh`, '2'])

    let stored: string | undefined
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let holderStarted = false
    const holder = flightOne.run(
      'k',
      async () => {
        holderStarted = true
        await released
        stored = 'answer'
        return 'answer'
      },
      async () => stored,
    )
    await until('holder running', () => holderStarted, 2000)
    let waiterWorked = false
    const started = performance.now()
    const waiter = flightTwo.run(
      'k',
      async () => {
        waiterWorked = true
        return 'waiter did it'
      },
      async () => stored,
    )
    // Channel traffic while the flight waits: delivered to the channel, not mistaken for a fill.
    await one.channel.announceSnapshot({ version: 3, fingerprint: 'f3', owner: 'one' })
    await one.channel.publishRefresh({ ids: [42], reason: 'purge', from: 'one' })
    await until('channel messages on the shared subscriber', () => two.snapshots.length === 1 && two.refreshes.length === 1, 2000)
    expect(waiterWorked).toBe(false)
    release()
    expect(await holder).toBe('answer')
    expect(await waiter).toBe('answer')
    expect(waiterWorked).toBe(false)
    // Woken by the flight's message, well before its 10 s lock would have run out.
    expect(performance.now() - started).toBeLessThan(5000)
    // The flight's own messages (raw keys, not JSON) are not the channel's business: no warnings.
    await admin.publish(`${prefix}filled`, 'some-other-key')
    await one.channel.publishRefresh({ reason: 'sentinel', from: 'one' })
    await until('sentinel received', () => two.refreshes.length === 2, 2000)
    expect(two.logger.warnings).toEqual([])
    expect(two.snapshots).toEqual([{ version: 3, fingerprint: 'f3', owner: 'one' }])
  })

  it('stops calling a listener once unsubscribed, and survives a listener that throws', async () => {
    newPrefix()
    const a = await instance(url, prefix)
    const seen: number[] = []
    const off = a.channel.onSnapshot((s) => seen.push(s.version))
    a.channel.onSnapshot(() => {
      throw new Error('listener bug')
    })
    await a.channel.announceSnapshot({ version: 1, fingerprint: 'f', owner: 'a' })
    await until('first', () => a.snapshots.length === 1, 2000)
    off()
    await a.channel.announceSnapshot({ version: 2, fingerprint: 'f', owner: 'a' })
    await until('second', () => a.snapshots.length === 2, 2000)
    expect(seen).toEqual([1])
    expect(a.logger.warnings.map((w) => w.message)).toEqual(['cluster channel: a listener threw', 'cluster channel: a listener threw'])
  })

  it('refuses to send what receivers would drop, and sends too many ids as "all"', async () => {
    newPrefix()
    const a = await instance(url, prefix)
    expect(await a.channel.announceSnapshot({ version: Number.NaN, fingerprint: 'f', owner: 'a' })).toBe(false)
    expect(await a.channel.publishRefresh({ ids: [0], reason: 'r', from: 'a' })).toBe(-1)
    expect(a.logger.warnings).toHaveLength(2)
    const many = Array.from({ length: MAX_REFRESH_IDS + 1 }, (_, i) => i + 1)
    expect(await a.channel.publishRefresh({ ids: many, listing: false, reason: 'bulk', from: 'a' })).toBe(1)
    await until('received', () => a.refreshes.length === 1, 2000)
    expect(a.refreshes).toEqual([{ all: true, listing: false, reason: 'bulk', from: 'a' }])
  })
})

describe('cluster channel when Redis is down', () => {
  const ownServer = ownRedisServer()

  it('answers false / -1 / undefined within the command timeout when Redis is killed, and works again after a restart', async () => {
    const server = ownServer()
    const prefix = `test:${randomUUID()}:`
    const [a, b] = [await instance(server.url, prefix), await instance(server.url, prefix)]
    await server.kill()
    const announced = await timed(a.channel.announceSnapshot({ version: 1, fingerprint: 'f', owner: 'a' }))
    const published = await timed(a.channel.publishRefresh({ all: true, reason: 'purge', from: 'a' }))
    const latest = await timed(b.channel.latestSnapshot())
    expect([announced.result, published.result, latest.result]).toEqual([false, -1, undefined])
    for (const { ms } of [announced, published, latest]) expect(ms).toBeLessThan(2 * COMMAND_TIMEOUT_MS + 300)

    await server.restart()
    await until('reconnected', () => clients.every((client) => isRedisUp(client)), 10_000)
    // ioredis re-subscribes the channels after the reconnect; announce until b hears one.
    await until(
      'announcement after restart',
      async () => {
        await a.channel.announceSnapshot({ version: 2, fingerprint: 'f2', owner: 'a' })
        await sleep(50)
        return b.snapshots.some((s) => s.version === 2)
      },
      10_000,
    )
    expect(await b.channel.latestSnapshot()).toEqual({ version: 2, fingerprint: 'f2', owner: 'a' })
  })

  it('gives up within the command timeout when Redis hangs', async () => {
    const server = ownServer()
    const prefix = `test:${randomUUID()}:`
    const a = await instance(server.url, prefix)
    server.pause()
    const [announced, published, latest] = await Promise.all([
      timed(a.channel.announceSnapshot({ version: 1, fingerprint: 'f', owner: 'a' })),
      timed(a.channel.publishRefresh({ ids: [1], reason: 'purge', from: 'a' })),
      timed(a.channel.latestSnapshot()),
    ])
    server.resume()
    expect([announced.result, published.result, latest.result]).toEqual([false, -1, undefined])
    for (const { ms } of [announced, published, latest]) expect(ms).toBeLessThan(2 * COMMAND_TIMEOUT_MS + 300)
  })

  it('subscribes once Redis comes up when it was down at creation', async () => {
    const server = ownServer()
    const prefix = `test:${randomUUID()}:`
    const sender = await instance(server.url, prefix)
    await server.kill()
    const redis = connect(server.url)
    const subscriber = connect(server.url)
    await until('clients noticed', () => !isRedisUp(redis) && !isRedisUp(subscriber) && !isRedisUp(sender.redis), 5000)
    const logger = recordingLogger()
    const late = createClusterChannel({ redis, subscriber, prefix, commandTimeoutMs: COMMAND_TIMEOUT_MS, logger, subscribeWarnAfterMs: 50 })
    channels.push(late)
    const heard: RefreshMessage[] = []
    late.onRefresh((m) => heard.push(m))
    let isReady = false
    void late.ready().then(() => (isReady = true))
    await sleep(300)
    expect(isReady).toBe(false)
    // One warning for both channels, saying what to check.
    expect(logger.warnings).toHaveLength(1)
    expect(logger.warnings[0]!.message).toMatch(/^cluster channel: not subscribed 50 ms after start: Redis cannot be reached; retrying in the background .* Check REDIS_URL/)
    expect(logger.warnings[0]!.details).toMatchObject({ channels: [`${prefix}snapshots`, `${prefix}refresh`] })
    await server.restart()
    await until('subscribed after restart', () => isReady, 10_000)
    await until('sender reconnected', () => isRedisUp(sender.redis), 10_000)
    expect(await sender.channel.publishRefresh({ ids: [7], reason: 'late', from: 'sender' })).toBeGreaterThanOrEqual(1)
    await until('heard', () => heard.length === 1, 2000)
    expect(heard).toEqual([{ ids: [7], reason: 'late', from: 'sender' }])
    expect(logger.warnings).toHaveLength(1)
  })
})

describe('cluster channel subscribing', () => {
  /** A subscriber whose connection status and SUBSCRIBE answers the test sets. */
  function stagedSubscriber(status: string, subscribe: (channel: string) => Promise<unknown>) {
    const readyListeners: Array<() => void> = []
    const sent: string[] = []
    const subscriber = {
      status,
      subscribe: (channel: string) => {
        sent.push(channel)
        return subscribe(channel)
      },
      on: (event: 'message' | 'ready', listener: (() => void) | ((channel: string, message: string) => void)) =>
        void (event === 'ready' && readyListeners.push(listener as () => void)),
    }
    return {
      subscriber, sent,
      turnReady: () => {
        subscriber.status = 'ready'
        readyListeners.forEach((listener) => listener())
      },
    }
  }
  const noRedis = { set: async () => 'OK', get: async () => null, publish: async () => 0 }

  it('sends no SUBSCRIBE while the connection is still connecting, subscribes as it turns ready, and logs nothing', async () => {
    const staged = stagedSubscriber('connecting', async () => 1)
    const logger = recordingLogger()
    const channel = createClusterChannel({ redis: noRedis, subscriber: staged.subscriber, prefix: 'p:', commandTimeoutMs: 50, logger, subscribeWarnAfterMs: 5000 })
    channels.push(channel)
    await sleep(450)
    expect(staged.sent).toEqual([])
    staged.turnReady()
    expect(staged.sent).toEqual(['p:snapshots', 'p:refresh'])
    await channel.ready()
    expect(logger.warnings).toEqual([])
  })

  it('warns once, with what to check, when Redis refuses SUBSCRIBE, and keeps retrying until it is allowed', async () => {
    let allowed = false
    const staged = stagedSubscriber('ready', async (name) => {
      if (allowed) return 1
      throw new Error(`NOPERM User shield has no permissions to access the '${name}' channel`)
    })
    const logger = recordingLogger()
    const channel = createClusterChannel({ redis: noRedis, subscriber: staged.subscriber, prefix: 'p:', commandTimeoutMs: 50, logger })
    channels.push(channel)
    await until('retried', () => staged.sent.length >= 6, 5000)
    allowed = true
    await channel.ready()
    expect(logger.warnings).toHaveLength(1)
    expect(logger.warnings[0]!.message).toMatch(/^cluster channel: Redis refused or did not answer SUBSCRIBE; retrying in the background .* Check that the Redis user may SUBSCRIBE/)
    expect(logger.warnings[0]!.details).toMatchObject({ channel: 'p:snapshots', reason: "NOPERM User shield has no permissions to access the 'p:snapshots' channel" })
    expect(logger.warnings[0]!.details).not.toHaveProperty('err')
  })
})

describe('cluster channel message validation', () => {
  /** A subscriber driven by hand. */
  function handSubscriber(subscribe: () => Promise<unknown> = async () => 1) {
    const listeners: Array<(channel: string, message: string) => void> = []
    const readyListeners: Array<() => void> = []
    const subscriber: ClusterChannelSubscriber = {
      subscribe,
      on: (event: 'message' | 'ready', listener: ((channel: string, message: string) => void) | (() => void)) =>
        void (event === 'message' ? listeners.push(listener) : readyListeners.push(listener as () => void)),
    }
    return {
      subscriber,
      emit: (channel: string, message: string) => listeners.forEach((listener) => listener(channel, message)),
      ready: () => readyListeners.forEach((listener) => listener()),
    }
  }
  const noRedis = { set: async () => 'OK', get: async () => null, publish: async () => 0 }

  it('tells when the subscriber connection is back after a drop, not when it first connects', async () => {
    const pending: Array<() => void> = []
    const hand = handSubscriber(() => new Promise((resolve) => void pending.push(() => resolve(1))))
    const release = () => pending.forEach((resolve) => resolve())
    const channel = createClusterChannel({ redis: noRedis, subscriber: hand.subscriber, prefix: 'p:', commandTimeoutMs: 5_000, logger: recordingLogger() })
    let reconnects = 0
    channel.onReconnected(() => reconnects++)
    // The first `ready`: the connection is up, the SUBSCRIBEs are still on their way.
    hand.ready()
    expect(reconnects).toBe(0)
    release()
    await channel.ready()
    hand.ready()
    expect(reconnects).toBe(1)
    channel.close()
    hand.ready()
    expect(reconnects).toBe(1)
  })

  it('ignores other channels on a shared subscriber and validates its own', async () => {
    const hand = handSubscriber()
    const logger = recordingLogger()
    const channel = createClusterChannel({ redis: noRedis, subscriber: hand.subscriber, prefix: 'p:', commandTimeoutMs: 50, logger })
    await channel.ready()
    const got: unknown[] = []
    channel.onSnapshot((a) => got.push(a))
    channel.onRefresh((m) => got.push(m))
    hand.emit('p:filled', 'not json, not ours')
    hand.emit('other:snapshots', '{')
    hand.emit('p:snapshots', '{')
    hand.emit('p:refresh', JSON.stringify({ ids: [], reason: '', from: 'x' }))
    expect(logger.warnings).toHaveLength(1)
    expect(got).toEqual([{ ids: [], reason: '', from: 'x' }])
    channel.close()
    hand.emit('p:refresh', JSON.stringify({ reason: '', from: 'x' }))
    expect(got).toHaveLength(1)
  })

  it('parses only the documented fields with the documented types', () => {
    expect(parseSnapshotAnnouncement({ version: 0, fingerprint: 'f', owner: 'o' })).toEqual({ version: 0, fingerprint: 'f', owner: 'o' })
    expect(parseSnapshotAnnouncement({ version: '1', fingerprint: 'f', owner: 'o' })).toHaveProperty('invalid')
    expect(parseSnapshotAnnouncement({ version: 1, fingerprint: 'f'.repeat(1025), owner: 'o' })).toHaveProperty('invalid')
    // The time of the leader's last good sync rides along; an instance of an older release ignores it.
    expect(parseSnapshotAnnouncement({ version: 2, fingerprint: 'f', owner: 'o', checkedAt: 1_700_000_000_000 })).toEqual({ version: 2, fingerprint: 'f', owner: 'o', checkedAt: 1_700_000_000_000 })
    expect(parseSnapshotAnnouncement({ version: 2, fingerprint: 'f', owner: 'o', checkedAt: '2026-11-22' })).toHaveProperty('invalid')
    expect(parseSnapshotAnnouncement({ version: 2, fingerprint: 'f', owner: 'o', checkedAt: -1 })).toHaveProperty('invalid')
    // A snapshot stored as a patch names its base and its place in the patch log.
    expect(parseSnapshotAnnouncement({ version: 3, fingerprint: 'g', owner: 'o', patch: { from: 'f', index: 4, x: 1 } })).toEqual({ version: 3, fingerprint: 'g', owner: 'o', patch: { from: 'f', index: 4 } })
    expect(parseSnapshotAnnouncement({ version: 3, fingerprint: 'g', owner: 'o', patch: { from: '', index: 4 } })).toHaveProperty('invalid')
    expect(parseSnapshotAnnouncement({ version: 3, fingerprint: 'g', owner: 'o', patch: { from: 'f', index: -1 } })).toHaveProperty('invalid')
    expect(parseRefreshMessage({ ids: [1], all: false, listing: true, reason: 'r', from: 'f', x: 1 })).toEqual({ ids: [1], all: false, listing: true, reason: 'r', from: 'f' })
    expect(parseRefreshMessage({ ids: Array.from({ length: MAX_REFRESH_IDS }, (_, i) => i + 1), reason: 'r', from: 'f' })).not.toHaveProperty('invalid')
    expect(parseRefreshMessage({ listing: 1, reason: 'r', from: 'f' })).toHaveProperty('invalid')
    expect(parseRefreshMessage({ reason: 'r'.repeat(1001), from: 'f' })).toHaveProperty('invalid')
    // Endpoint generations: router names to generation names.
    expect(parseRefreshMessage({ endpoints: { images: 'k9' }, reason: 'purge', from: 'f' })).toEqual({ endpoints: { images: 'k9' }, reason: 'purge', from: 'f' })
    expect(parseRefreshMessage({ endpoints: { 'im ages': 'k9' }, reason: 'purge', from: 'f' })).toHaveProperty('invalid')
    expect(parseRefreshMessage({ endpoints: { images: '' }, reason: 'purge', from: 'f' })).toHaveProperty('invalid')
    expect(parseRefreshMessage({ endpoints: ['images'], reason: 'purge', from: 'f' })).toHaveProperty('invalid')
  })

  it('answers false and -1 when the command connection fails or throws', async () => {
    const hand = handSubscriber()
    const logger = recordingLogger()
    const failing = {
      set: () => Promise.reject(new Error('down')),
      get: () => Promise.reject(new Error('down')),
      publish: (): Promise<number> => {
        throw new Error('synchronous client bug')
      },
    }
    const channel = createClusterChannel({ redis: failing, subscriber: hand.subscriber, prefix: 'p:', commandTimeoutMs: 50, logger })
    expect(await channel.announceSnapshot({ version: 1, fingerprint: 'f', owner: 'o' })).toBe(false)
    expect(await channel.publishRefresh({ reason: 'r', from: 'f' })).toBe(-1)
    expect(await channel.latestSnapshot()).toBeUndefined()
  })
})
