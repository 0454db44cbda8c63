/**
 * The leader lease: one leader among instances sharing a Redis, renewal, hand-over on stop and on
 * a crash, stepping down when the key is taken, and the standalone fallback while Redis cannot
 * answer — against a real Redis (a private one where it is killed or paused), plus a stub for the
 * failure paths that a real server cannot produce on demand.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { isRedisUp, type RedisClient } from '../cache/stores/redis-client.js'
import { ownRedisServer } from '../../test/helpers/redis-server.js'
import { faultyCommands } from '../../test/helpers/faulty-commands.js'
import { recordingLogger } from '../../test/helpers/recording-logger.js'
import { suiteRedisClients, suiteSharedRedis, until } from '../../test/helpers/redis-clients.js'
import { RedisCommandTimeoutError } from '../cache/stores/bounded-command.js'
import { createLeaderLease, type LeaderLease, type LeaderLeaseOptions, type LeaseRedis, type LeaseRole } from './leader-lease.js'
import type { Timers } from '../timers.js'

const COMMAND_TIMEOUT_MS = 200

describe('leader lease on a real Redis', () => {
  const shared = suiteSharedRedis()
  const clients = suiteRedisClients(COMMAND_TIMEOUT_MS)
  const leases: LeaderLease[] = []
  afterEach(() => {
    for (const lease of leases.splice(0)) lease.abandon()
  })

  const connect = (to: string = shared.url): Promise<RedisClient> => clients.connect(to)

  /** `count` leases on one key, each with its own connection, recording their role changes. */
  async function instances(count: number, leaseMs: number, to: string = shared.url) {
    const key = shared.key('leader')
    const made = await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const redis = await connect(to)
        const logger = recordingLogger()
        const changes: Array<[LeaseRole, LeaseRole]> = []
        const lease = createLeaderLease({
          redis,
          key,
          owner: `instance-${index}-${randomUUID()}`,
          leaseMs,
          commandTimeoutMs: COMMAND_TIMEOUT_MS,
          now: () => performance.now(),
          logger,
          onRoleChange: (role, previous) => changes.push([role, previous]),
        })
        leases.push(lease)
        return { lease, logger, changes }
      }),
    )
    return { key, made, leases: made.map((one) => one.lease) }
  }

  const leaders = (group: readonly LeaderLease[]) => group.filter((lease) => lease.role === 'leader')

  it('makes exactly one of three instances the leader and the others followers', async () => {
    const { key, leases: group, made } = await instances(3, 5000)
    expect(group.map((lease) => lease.role)).toEqual(['follower', 'follower', 'follower'])
    const roles = await Promise.all(group.map((lease) => lease.checkNow()))
    expect(roles.filter((role) => role === 'leader')).toHaveLength(1)
    expect(roles.filter((role) => role === 'follower')).toHaveLength(2)
    const [leader] = leaders(group)
    expect(await shared.admin.get(key)).toBe(leader!.owner)
    const pttl = await shared.admin.pttl(key)
    expect(pttl).toBeGreaterThan(0)
    expect(pttl).toBeLessThanOrEqual(5000)
    // A change is reported once: the leader went follower → leader, the followers never changed.
    expect(made.map((one) => one.changes.length).sort()).toEqual([0, 0, 1])
    expect(made.flatMap((one) => one.logger.lines)).toEqual(['info leader lease acquired: this instance syncs'])
  })

  it('keeps the same leader over several lease lengths by renewing every third of it', async () => {
    const leaseMs = 600
    const { key, leases: group, made } = await instances(3, leaseMs)
    for (const lease of group) lease.start()
    await until('a leader', () => leaders(group).length === 1, 2000)
    const [leader] = leaders(group)
    await sleep(leaseMs * 3)
    expect(leaders(group)).toEqual([leader])
    expect(group.filter((lease) => lease !== leader).map((lease) => lease.role)).toEqual(['follower', 'follower'])
    expect(await shared.admin.get(key)).toBe(leader!.owner)
    // Renewed, not re-acquired: the leader changed role once in all that time.
    expect(made.find((one) => one.lease === leader)!.changes).toEqual([['leader', 'follower']])
  })

  it('releases the lease on stop, so another instance takes it at its next tick', async () => {
    const { key, leases: group, made } = await instances(2, 30_000)
    const [first, second] = group as [LeaderLease, LeaderLease]
    expect(await first.checkNow()).toBe('leader')
    expect(await second.checkNow()).toBe('follower')
    await first.stop()
    expect(first.role).toBe('follower')
    expect(made[0]!.changes).toEqual([
      ['leader', 'follower'],
      ['follower', 'leader'],
    ])
    expect(await shared.admin.get(key)).toBeNull()
    expect(await second.checkNow()).toBe('leader')
    // A stopped lease neither ticks nor takes the key back.
    expect(await first.checkNow()).toBe('follower')
    expect(await shared.admin.get(key)).toBe(second.owner)
  })

  it('does not delete a lease held by someone else when it stops', async () => {
    const { key, leases: group } = await instances(2, 30_000)
    const [first, second] = group as [LeaderLease, LeaderLease]
    await first.checkNow()
    await second.checkNow()
    await second.stop()
    expect(await shared.admin.get(key)).toBe(first.owner)
  })

  it('keeps a crashed leader\'s key until it expires, then another takes over within a lease and a tick', async () => {
    const leaseMs = 450
    const { key, leases: group } = await instances(3, leaseMs)
    const [first, ...others] = group as [LeaderLease, LeaderLease, LeaderLease]
    const acquiredFrom = performance.now()
    expect(await first.checkNow()).toBe('leader')
    for (const lease of others) lease.start()
    first.abandon()
    const crashedAt = performance.now()
    expect(await shared.admin.get(key)).toBe(first.owner)
    expect(await others[0].checkNow()).toBe('follower')
    await until('a takeover', () => leaders(others).length > 0, 10 * leaseMs)
    const tookMs = performance.now() - crashedAt
    // The key outlived the crash until it expired (leaseMs after it was set, at the earliest), and a
    // follower took it within leaseMs + one tick of the crash; twice that as a margin for a loaded machine.
    expect(performance.now() - acquiredFrom).toBeGreaterThanOrEqual(leaseMs - 20)
    expect(tookMs).toBeLessThan(2 * (leaseMs + leaseMs / 3))
    expect(leaders(others)).toHaveLength(1)
    expect(await shared.admin.get(key)).toBe(leaders(others)[0]!.owner)
    expect(first.role).toBe('leader') // a crashed process learns nothing more
  })

  it('steps down to follower when its key is overwritten by someone else', async () => {
    const { key, made } = await instances(1, 30_000)
    const { lease, logger, changes } = made[0]!
    expect(await lease.checkNow()).toBe('leader')
    await shared.admin.set(key, 'someone-else', 'PX', 30_000)
    expect(await lease.checkNow()).toBe('follower')
    expect(changes.at(-1)).toEqual(['follower', 'leader'])
    expect(logger.lines.at(-1)).toMatch(/^warn leader lease lost/)
    expect(await shared.admin.get(key)).toBe('someone-else')
    expect(await lease.checkNow()).toBe('follower')
  })

  it('takes its key again when Redis lost it, and keeps leading', async () => {
    const { key, made } = await instances(2, 30_000)
    const [first, second] = made as [(typeof made)[0], (typeof made)[0]]
    expect(await first.lease.checkNow()).toBe('leader')
    expect(await second.lease.checkNow()).toBe('follower')
    await shared.admin.del(key)
    expect(await first.lease.checkNow()).toBe('leader')
    expect(await shared.admin.get(key)).toBe(first.lease.owner)
    expect(Number(await shared.admin.pttl(key))).toBeGreaterThan(29_000)
    expect(await second.lease.checkNow()).toBe('follower')
    expect(first.changes).toEqual([['leader', 'follower']])
  })

  describe('when Redis becomes unreachable', () => {
    const ownServer = ownRedisServer()

    it('turns a follower standalone at once and a leader standalone once its lease has run out; back to one leader after a restart', async () => {
      const server = ownServer()
      const leaseMs = 1500
      const { leases: group, made } = await instances(2, leaseMs, server.url)
      const [first, second] = group as [LeaderLease, LeaderLease]
      expect(await first.checkNow()).toBe('leader')
      expect(await second.checkNow()).toBe('follower')
      const renewedAt = performance.now()
      await server.kill()

      expect(await second.checkNow()).toBe('standalone')
      expect(await first.checkNow()).toBe('leader') // the lease it holds has not expired
      expect(made[0]!.logger.lines.at(-1)).toMatch(/^warn leader lease: redis did not renew it/)
      await sleep(Math.max(0, renewedAt + leaseMs + 20 - performance.now()))
      expect(await first.checkNow()).toBe('standalone')
      expect(made[0]!.changes.at(-1)).toEqual(['standalone', 'leader'])
      expect(made[1]!.changes.at(-1)).toEqual(['standalone', 'follower'])
      expect(made.every((one) => one.logger.lines.at(-1)!.startsWith('info leader lease: redis cannot say who leads'))).toBe(true)

      await server.restart()
      await until('clients reconnected', () => clients.all.every((client) => isRedisUp(client)), 10_000)
      const roles = await Promise.all(group.map((lease) => lease.checkNow()))
      expect(roles.sort()).toEqual(['follower', 'leader'])
    })

    it('turns standalone when Redis hangs, each tick bounded by the command timeout', async () => {
      const server = ownServer()
      const { leases: group } = await instances(2, 30_000, server.url)
      const [first, second] = group as [LeaderLease, LeaderLease]
      expect(await first.checkNow()).toBe('leader')
      server.pause()
      const started = performance.now()
      expect(await second.checkNow()).toBe('standalone')
      expect(await first.checkNow()).toBe('leader')
      expect(performance.now() - started).toBeLessThan(2 * (2 * COMMAND_TIMEOUT_MS) + 500)
      server.resume()
      await until('redis answering', async () => (await second.checkNow()) !== 'standalone', 10_000)
      expect(second.role).toBe('follower')
      expect(await first.checkNow()).toBe('leader')
    })
  })
})

/** A stub with the real semantics of SET NX PX and the two scripts, over a manual clock. */
function stubRedis(clock: { now: number }) {
  const data = new Map<string, { value: string; expiresAt: number }>()
  const { state, run } = faultyCommands()
  const read = (key: string) => {
    const entry = data.get(key)
    if (entry && entry.expiresAt <= clock.now) data.delete(key)
    return data.get(key)?.value
  }
  const redis: LeaseRedis = {
    set: (key, value, _px, ms) =>
      run(`set ${key} ${value} PX ${ms} NX`, () => {
        if (read(key) !== undefined) return null
        data.set(key, { value, expiresAt: clock.now + ms })
        return 'OK' as const
      }),
    eval: (script, _keys, key, owner, ms) =>
      run(script.includes('pexpire') ? `renew ${String(key)} ${String(owner)} ${String(ms)}` : `release ${String(key)} ${String(owner)}`, () => {
        const k = String(key)
        const holder = read(k)
        if (script.includes('pexpire')) {
          // Renews its own key, takes a missing one again, leaves another owner's alone.
          if (holder !== undefined && holder !== owner) return 0
          data.set(k, { value: String(owner), expiresAt: clock.now + Number(ms) })
          return holder === undefined ? 2 : 1
        }
        if (holder !== owner) return 0
        data.delete(k)
        return 1
      }),
  }
  return { redis, data, state }
}

/** Timers run by hand: `fire()` runs the due callbacks in order. */
function manualTimers(clock: { now: number }) {
  let nextId = 0
  const pending = new Map<number, { at: number; callback: () => void; ms: number }>()
  const timers: Timers = {
    setTimeout(callback, ms) {
      const id = ++nextId
      pending.set(id, { at: clock.now + ms, callback, ms })
      return id
    },
    clearTimeout: (handle) => void pending.delete(handle as number),
  }
  return {
    timers,
    pending,
    delays: () => [...pending.values()].map((entry) => entry.ms),
    advance(ms: number) {
      clock.now += ms
      for (const [id, entry] of [...pending].sort((a, b) => a[1].at - b[1].at)) {
        if (entry.at > clock.now) continue
        pending.delete(id)
        entry.callback()
      }
    },
  }
}

describe('leader lease failure paths (stub Redis)', () => {
  function setup(overrides: Partial<LeaderLeaseOptions> = {}) {
    const clock = { now: 1_000_000 }
    const stub = stubRedis(clock)
    const logger = recordingLogger()
    const changes: Array<[LeaseRole, LeaseRole]> = []
    const lease = createLeaderLease({
      redis: stub.redis,
      key: 'p:leader',
      owner: 'me',
      leaseMs: 900,
      commandTimeoutMs: 30,
      now: () => clock.now,
      logger,
      onRoleChange: (role, previous) => changes.push([role, previous]),
      ...overrides,
    })
    return { clock, stub, logger, changes, lease }
  }

  it.each(['fail', 'throw', 'hang'] as const)('turns a follower standalone when Redis %s, then back once it answers', async (mode) => {
    const { stub, lease, changes, logger } = setup()
    stub.state.mode = mode
    expect(await lease.checkNow()).toBe('standalone')
    expect(await lease.checkNow()).toBe('standalone')
    expect(changes).toEqual([['standalone', 'follower']])
    expect(logger.lines).toEqual(['info leader lease: redis cannot say who leads; syncing standalone until it answers'])
    stub.state.mode = 'ok'
    expect(await lease.checkNow()).toBe('leader')
    expect(changes.at(-1)).toEqual(['leader', 'standalone'])
  })

  it('keeps a leader leading through failed renewals while its lease runs, then turns standalone', async () => {
    const { clock, stub, lease, changes, logger } = setup()
    expect(await lease.checkNow()).toBe('leader')
    stub.state.mode = 'fail'
    clock.now += 300
    expect(await lease.checkNow()).toBe('leader')
    clock.now += 599
    expect(await lease.checkNow()).toBe('leader')
    // Logged once per run of failures, not every tick.
    expect(logger.lines.filter((line) => line.includes('did not renew'))).toHaveLength(1)
    clock.now += 1
    expect(await lease.checkNow()).toBe('standalone')
    expect(changes).toEqual([
      ['leader', 'follower'],
      ['standalone', 'leader'],
    ])
    // Its key expired meanwhile; when Redis answers it takes it again.
    stub.state.mode = 'ok'
    expect(await lease.checkNow()).toBe('leader')
  })

  it('takes its key again when it is gone and stays leader, without a change of role', async () => {
    const { clock, stub, lease, changes, logger } = setup()
    expect(await lease.checkNow()).toBe('leader')
    stub.data.clear() // Redis restarted without its data
    clock.now += 300
    expect(await lease.checkNow()).toBe('leader')
    expect(stub.data.get('p:leader')).toEqual({ value: 'me', expiresAt: clock.now + 900 })
    expect(changes).toEqual([['leader', 'follower']])
    expect(logger.lines.at(-1)).toBe('info leader lease: the key was gone (expired, or Redis lost it); taken again')
    // Another owner's key is still left alone.
    stub.data.set('p:leader', { value: 'other', expiresAt: clock.now + 900 })
    clock.now += 300
    expect(await lease.checkNow()).toBe('follower')
    expect(stub.data.get('p:leader')!.value).toBe('other')
  })

  it('ticks at once when the connection is ready again, only while started', async () => {
    const clock = { now: 0 }
    const manual = manualTimers(clock)
    const { stub, lease } = setup({ timers: manual.timers, now: () => clock.now })
    lease.reconnected()
    expect(stub.state.calls).toEqual([])
    lease.start()
    await until('first tick', () => lease.role === 'leader', 1000)
    stub.data.set('p:leader', { value: 'other', expiresAt: Number.MAX_SAFE_INTEGER })
    lease.reconnected() // no timer advanced: this tick is the reconnection's
    await until('stepped down', () => lease.role === 'follower', 1000)
    expect(stub.state.calls).toEqual(['set p:leader me PX 900 NX', 'renew p:leader me 900'])
    await lease.stop()
    const calls = stub.state.calls.length
    lease.reconnected()
    await new Promise((resolve) => setImmediate(resolve))
    expect(stub.state.calls).toHaveLength(calls)
  })

  it('renews with the compare-and-expire script and measures the lease from the last renewal', async () => {
    const { clock, stub, lease } = setup()
    await lease.checkNow()
    clock.now += 800
    await lease.checkNow()
    expect(stub.state.calls).toEqual(['set p:leader me PX 900 NX', 'renew p:leader me 900'])
    stub.state.mode = 'fail'
    clock.now += 850 // 1650 after acquiring, 850 after renewing
    expect(await lease.checkNow()).toBe('leader')
  })

  it('gives up on a hanging command after commandTimeoutMs with real timers', async () => {
    const { stub, lease } = setup()
    stub.state.mode = 'hang'
    const started = performance.now()
    expect(await lease.checkNow()).toBe('standalone')
    expect(performance.now() - started).toBeLessThan(30 + 400)
  })

  it('reports a timeout as a RedisCommandTimeoutError', async () => {
    const { redis, state } = stubRedis({ now: 0 })
    const errors: unknown[] = []
    const lease = createLeaderLease({
      redis,
      key: 'p:leader',
      owner: 'me',
      leaseMs: 900,
      commandTimeoutMs: 10,
      now: () => 0,
      logger: { info: (details) => errors.push((details as { err?: unknown }).err), warn: () => {} },
    })
    state.mode = 'hang'
    await lease.checkNow()
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(RedisCommandTimeoutError)
  })

  it('joins a tick already running instead of sending a second command', async () => {
    const { stub, lease } = setup()
    const [a, b] = await Promise.all([lease.checkNow(), lease.checkNow()])
    expect([a, b]).toEqual(['leader', 'leader'])
    expect(stub.state.calls).toHaveLength(1)
  })

  it('survives an onRoleChange that throws', async () => {
    const { lease, logger } = setup({
      onRoleChange: () => {
        throw new Error('listener bug')
      },
    })
    expect(await lease.checkNow()).toBe('leader')
    expect(logger.lines).toContain('warn leader lease: onRoleChange threw')
  })

  it('ticks at once on start, then every third of the lease, and never after stop', async () => {
    const clock = { now: 0 }
    const manual = manualTimers(clock)
    const { stub, lease } = setup({ timers: manual.timers, now: () => clock.now })
    lease.start()
    lease.start() // a second start does not start a second loop
    await until('first tick', () => lease.role === 'leader', 1000)
    await until('next tick scheduled', () => manual.delays().includes(300), 1000)
    expect(stub.state.calls).toEqual(['set p:leader me PX 900 NX'])
    for (let i = 1; i <= 3; i++) {
      manual.advance(300)
      await until(`renewal ${i}`, () => stub.state.calls.length === 1 + i && manual.delays().includes(300), 1000)
    }
    expect(stub.state.calls.slice(1)).toEqual(['renew p:leader me 900', 'renew p:leader me 900', 'renew p:leader me 900'])
    await lease.stop()
    expect(stub.state.calls.at(-1)).toBe('release p:leader me')
    expect(stub.data.size).toBe(0)
    expect(manual.pending.size).toBe(0)
    manual.advance(10_000)
    expect(stub.state.calls.at(-1)).toBe('release p:leader me')
  })

  it('keeps ticking when Redis fails, without unhandled rejections', async () => {
    const clock = { now: 0 }
    const manual = manualTimers(clock)
    const { stub, lease } = setup({ timers: manual.timers, now: () => clock.now })
    stub.state.mode = 'throw'
    lease.start()
    await until('standalone', () => lease.role === 'standalone', 1000)
    for (let i = 1; i <= 3; i++) {
      await until('tick scheduled', () => manual.delays().includes(300), 1000)
      manual.advance(300)
    }
    await until('four attempts', () => stub.state.calls.length === 4, 1000)
    stub.state.mode = 'ok'
    await until('tick scheduled', () => manual.delays().includes(300), 1000)
    manual.advance(300)
    await until('leader again', () => lease.role === 'leader', 1000)
    lease.abandon()
    expect(manual.pending.size).toBe(0)
    expect(stub.data.get('p:leader')?.value).toBe('me') // abandon leaves the key to expire
  })

  it('stops cleanly even when the release fails', async () => {
    const { stub, lease, logger } = setup()
    await lease.checkNow()
    stub.state.mode = 'hang'
    await lease.stop()
    expect(lease.role).toBe('follower')
    expect(logger.lines).toContain('warn leader lease: could not release it; it expires by itself')
    await expect(lease.stop()).resolves.toBeUndefined()
  })

  it('refuses options that cannot work', () => {
    const clock = { now: 0 }
    const { redis } = stubRedis(clock)
    const base = { redis, key: 'k', owner: 'o', leaseMs: 900, commandTimeoutMs: 30, now: () => 0, logger: recordingLogger() }
    expect(() => createLeaderLease({ ...base, leaseMs: 0 })).toThrow(/leaseMs/)
    expect(() => createLeaderLease({ ...base, commandTimeoutMs: Number.NaN })).toThrow(/commandTimeoutMs/)
    expect(() => createLeaderLease({ ...base, owner: '' })).toThrow(/owner/)
    expect(() => createLeaderLease({ ...base, key: '' })).toThrow(/key/)
  })
})
