/**
 * Served versions against a real Redis: the syncing instance waits for a lagging instance, stops
 * waiting for a dead one once it ages out, names the laggards when the time runs out, and never
 * waits on a Redis that cannot answer. Time is an injected clock the tests move by hand; only the
 * heartbeats and the wait's polls run on real (short) timers.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { ownRedisServer } from '../../test/helpers/redis-server.js'
import { recordingLogger } from '../../test/helpers/recording-logger.js'
import { suiteRedisClients, suiteSharedRedis, until as untilWithin } from '../../test/helpers/redis-clients.js'
import { createServedVersions, type ServedVersions, type ServedVersionsOptions } from './served-versions.js'

const COMMAND_TIMEOUT_MS = 200
const HEARTBEAT_MS = 20

const until = (what: string, probe: () => boolean | Promise<boolean>) => untilWithin(what, probe, 10_000)

/** A clock the test moves; starts well after the epoch so `now - staleAfter` stays positive. */
function manualClock() {
  let time = 1_000_000
  return { now: () => time, advance: (ms: number) => void (time += ms) }
}

describe('served versions on a real Redis', () => {
  const shared = suiteSharedRedis()
  const clients = suiteRedisClients(COMMAND_TIMEOUT_MS)
  const made: ServedVersions[] = []
  afterEach(() => {
    for (const served of made.splice(0)) served.abandon()
  })

  /** `names.length` instances on one hash, each with its own connection and the one clock. */
  async function instances(names: readonly string[], clock: { now: () => number }, extra: Partial<ServedVersionsOptions> = {}, to = shared.url) {
    const key = shared.key('served')
    const logger = recordingLogger()
    const all = await Promise.all(names.map(async (owner) => {
      const served = createServedVersions({
        redis: await clients.connect(to),
        key,
        owner,
        heartbeatMs: HEARTBEAT_MS,
        commandTimeoutMs: COMMAND_TIMEOUT_MS,
        now: clock.now,
        logger,
        ...extra,
      })
      made.push(served)
      return served
    }))
    const fields = async () => Object.fromEntries(Object.entries(await shared.admin.hgetall(key)).map(([id, text]) => [id, JSON.parse(text) as { fingerprint: string; at: number }]))
    /** Until every named instance's field was written at the clock's present time. */
    const heardFrom = (owners: readonly string[]) => until('heartbeats', async () => {
      const now = await fields()
      return owners.every((owner) => now[owner]?.at === clock.now())
    })
    return { key, all, fields, heardFrom, logger }
  }

  it('waits while a follower still serves the old snapshot, and ends as soon as it serves the new one', async () => {
    const clock = manualClock()
    const { all: [leader, follower1, follower2], heardFrom } = await instances(['leader', 'follower-1', 'follower-2'], clock)
    for (const served of [leader!, follower1!, follower2!]) {
      served.report('old')
      served.start()
    }
    await heardFrom(['leader', 'follower-1', 'follower-2'])
    leader!.report('new')
    follower1!.report('new')

    let settled = false
    const waiting = leader!.waitForAll('new', 10_000).finally(() => void (settled = true))
    // Many polls later it still waits: follower-2 serves 'old'.
    await sleep(HEARTBEAT_MS * 10)
    expect(settled).toBe(false)

    follower2!.report('new')
    const result = await waiting
    expect(result).toEqual({ allServe: true, lagging: [], waitedMs: 0 })
  })

  it('counts a follower that skipped ahead to a newer snapshot of the syncing instance as serving', async () => {
    const clock = manualClock()
    const { all: [leader, follower], heardFrom, fields } = await instances(['leader', 'follower'], clock)
    leader!.report('first')
    leader!.report('second')
    follower!.report('second')
    leader!.start()
    follower!.start()
    await heardFrom(['leader', 'follower'])
    expect(await leader!.waitForAll('first', 10_000)).toMatchObject({ allServe: true, lagging: [] })
    // …but not one still serving an older snapshot.
    follower!.report('first')
    await until('the follower records it', async () => (await fields()).follower?.fingerprint === 'first')
    expect((await leader!.waitForAll('second', 0)).allServe).toBe(false)
  })

  it('stops waiting for an instance that died once its record ages out, and deletes that record', async () => {
    const clock = manualClock()
    const staleAfterMs = 300
    const { all: [leader, live, dead], heardFrom, fields } = await instances(['leader', 'live', 'dead'], clock, { staleAfterMs })
    for (const served of [leader!, live!, dead!]) {
      served.report('old')
      served.start()
    }
    await heardFrom(['leader', 'live', 'dead'])
    dead!.abandon() // a crash: its record stays, never written again
    leader!.report('new')
    live!.report('new')

    let settled = false
    const waiting = leader!.waitForAll('new', 10_000).finally(() => void (settled = true))
    // Time passes in steps shorter than the ageing, the live instances heard from at each.
    for (let moved = 0; moved <= staleAfterMs; moved += 100) {
      expect(settled).toBe(false)
      clock.advance(100)
      await heardFrom(['leader', 'live'])
    }
    const result = await waiting
    expect(result.allServe).toBe(true)
    expect(result.lagging).toEqual([])
    expect(result.waitedMs).toBeGreaterThan(staleAfterMs)
    expect(Object.keys(await fields()).sort()).toEqual(['leader', 'live'])
  })

  it('gives up after the time allowed, naming the instances that still serve another snapshot', async () => {
    const clock = manualClock()
    const { all: [leader, slow1, slow2, quick], heardFrom } = await instances(['leader', 'slow-1', 'slow-2', 'quick'], clock, { staleAfterMs: 60_000 })
    for (const served of [leader!, slow1!, slow2!, quick!]) {
      served.report('old')
      served.start()
    }
    await heardFrom(['leader', 'slow-1', 'slow-2', 'quick'])
    leader!.report('new')
    quick!.report('new')
    const waiting = leader!.waitForAll('new', 5000)
    await sleep(HEARTBEAT_MS * 5)
    clock.advance(5000)
    expect(await waiting).toEqual({ allServe: false, lagging: ['slow-1', 'slow-2'], waitedMs: 5000, reason: 'timeout' })
  })

  it('a stopped instance deletes its record, so nobody waits for it', async () => {
    const clock = manualClock()
    const { all: [leader, leaving], heardFrom, fields } = await instances(['leader', 'leaving'], clock)
    leader!.report('new')
    leaving!.report('old')
    leader!.start()
    leaving!.start()
    await heardFrom(['leader', 'leaving'])
    await leaving!.stop()
    expect(Object.keys(await fields())).toEqual(['leader'])
    expect(await leader!.waitForAll('new', 10_000)).toMatchObject({ allServe: true, lagging: [] })
  })

  it('deletes a record it cannot read rather than waiting for it', async () => {
    const clock = manualClock()
    const { key, all: [leader], heardFrom, fields } = await instances(['leader'], clock)
    leader!.report('new')
    leader!.start()
    await heardFrom(['leader'])
    await shared.admin.hset(key, 'garbage', 'not json', 'half', JSON.stringify({ fingerprint: 'old' }))
    expect(await leader!.waitForAll('new', 10_000)).toMatchObject({ allServe: true, lagging: [] })
    expect(Object.keys(await fields())).toEqual(['leader'])
  })

  describe('when Redis cannot answer', () => {
    const server = ownRedisServer()

    it('does not wait on a Redis that is down: resolves at once, not confirmed, and logs it', async () => {
      const clock = manualClock()
      const { all: [leader], logger } = await instances(['leader'], clock, {}, server().url)
      leader!.report('new')
      leader!.start()
      await server().kill()
      const result = await leader!.waitForAll('new', 60_000)
      expect(result).toEqual({ allServe: false, lagging: [], waitedMs: 0, reason: 'redis' })
      expect(logger.lines).toContain('warn served versions: Redis cannot say which snapshot each instance serves; not waiting')
      await server().restart()
    })

    it('does not wait longer than one command on a Redis that hangs', async () => {
      const clock = manualClock()
      const { all: [leader] } = await instances(['leader'], clock, {}, server().url)
      leader!.report('new')
      server().pause()
      const result = await leader!.waitForAll('new', 60_000)
      expect(result).toMatchObject({ allServe: false, reason: 'redis' })
    })
  })
})
