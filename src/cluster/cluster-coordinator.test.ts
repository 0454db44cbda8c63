/**
 * The coordinator's part in keeping a shared copy in Redis: a leader puts its snapshot back when
 * Redis answers that none is recorded (restarted empty, or down while the leader synced
 * standalone), and only then — not while Redis fails, not over another instance's announcement,
 * never as a follower. Stubs for the lease, channel and sync: the real ones are exercised against
 * real Redis servers in test/integration/redis-faults.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import type { ClusterChannel, RecordedSnapshot, SnapshotAnnouncement } from './cluster-channel.js'
import type { Snapshot } from '../tree/snapshot.js'
import { makeSnapshot } from '../../test/helpers/make-snapshot.js'
import { createClusterCoordinator, type ClusterCoordinator } from './cluster-coordinator.js'
import type { LeaderLease, LeaseRole } from './leader-lease.js'
import type { RefreshRequest } from '../sync/refresh-request.js'
import type { Timers } from '../timers.js'
import type { SyncService } from '../sync/sync-service.js'

const POLL_MS = 10
const timers: Timers = { setTimeout: (callback, ms) => setTimeout(callback, ms), clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout) }
const quiet = { info: () => undefined, warn: () => undefined }

function stubLease(role: LeaseRole): LeaderLease & { role: LeaseRole } {
  return { role, owner: 'me', start: () => undefined, checkNow: async () => role, reconnected: () => undefined, stop: async () => undefined, abandon: () => undefined }
}

/** What Redis would answer for the recorded announcement; `answer` switches between the cases. */
function stubChannel() {
  const state = {
    answer: 'recorded' as 'recorded' | 'failing', recorded: undefined as SnapshotAnnouncement | undefined, announced: [] as SnapshotAnnouncement[], closed: false,
    reconnected: [] as Array<() => void>,
  }
  const channel: ClusterChannel = {
    announceSnapshot: async (a) => {
      if (state.answer === 'failing') return false
      state.announced.push(a)
      state.recorded = a
      return true
    },
    latestSnapshot: async () => (state.answer === 'failing' ? undefined : state.recorded),
    recordedSnapshot: async (): Promise<RecordedSnapshot> => (state.answer === 'failing' ? { ok: false } : state.recorded ? { ok: true, announcement: state.recorded } : { ok: true }),
    onSnapshot: () => () => undefined,
    publishRefresh: async () => 1,
    recordEndpointGeneration: async () => true,
    endpointGeneration: async () => undefined,
    onRefresh: () => () => undefined,
    onReconnected: (listener) => {
      state.reconnected.push(listener)
      return () => void state.reconnected.splice(state.reconnected.indexOf(listener), 1)
    },
    ready: async () => undefined,
    close: () => void (state.closed = true),
  }
  return { channel, state }
}

function stubSync(current: Snapshot | undefined) {
  const received: Snapshot[] = []
  const refreshed: RefreshRequest[] = []
  const sync = {
    current,
    status: { lastAttemptAt: undefined, lastSuccessAt: undefined, lastError: undefined, consecutiveFailures: 0, running: false, lastMode: undefined } as SyncService['status'],
    start: () => undefined,
    adopt: () => false,
    receive: (snapshot: Snapshot) => {
      received.push(snapshot)
      sync.current = snapshot
      return true
    },
    syncNow: async () => ({ ok: true as const, mode: 'incremental' as const, changed: false, pages: 0, detailsFetched: 0, durationMs: 0 }),
    refresh: (request: RefreshRequest) => void refreshed.push(request),
    stop: async () => undefined,
  } satisfies SyncService
  return { sync, received, refreshed }
}

const running: ClusterCoordinator[] = []
afterEach(async () => {
  for (const coordinator of running.splice(0)) await coordinator.stop()
})

function start(options: { role: LeaseRole; current?: Snapshot; shared?: Snapshot; pollMs?: number; load?: () => Promise<Snapshot | undefined> }) {
  const lease = stubLease(options.role)
  const { channel, state } = stubChannel()
  const { sync, received, refreshed } = stubSync(options.current)
  const stored: Snapshot[] = []
  const asked: Array<SnapshotAnnouncement | undefined> = []
  const coordinator = createClusterCoordinator({
    sync, lease, channel, timers, logger: quiet, pollMs: options.pollMs ?? POLL_MS,
    loadShared: async (announcement) => {
      asked.push(announcement)
      return options.load ? options.load() : options.shared
    },
    storeShared: async (snapshot) => void stored.push(snapshot),
  })
  coordinator.start()
  running.push(coordinator)
  return { coordinator, lease, state, stored, received, sync, refreshed, asked }
}

/** Several polls' worth of time. */
const polls = (n: number) => sleep(POLL_MS * n + 20)

describe('keeping the shared snapshot in Redis', () => {
  it('a leader stores and announces its snapshot again when Redis answers that none is recorded, once', async () => {
    const current = makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }], {}, 7)
    const { state, stored } = start({ role: 'leader', current })
    for (let i = 0; i < 100 && state.announced.length === 0; i++) await sleep(5)
    expect(stored).toEqual([current])
    expect(state.announced).toEqual([{ version: 7, fingerprint: current.fingerprint, owner: 'me' }])
    await polls(5)
    // Recorded now: nothing is written again.
    expect(stored).toHaveLength(1)

    // Redis restarted empty: the key is gone, and the leader puts it back.
    state.recorded = undefined
    for (let i = 0; i < 100 && stored.length === 1; i++) await sleep(5)
    expect(stored).toHaveLength(2)
    expect(state.recorded).toEqual({ version: 7, fingerprint: current.fingerprint, owner: 'me' })
  })

  it('a leader writes nothing while Redis cannot answer, nor over another instance\'s announcement, nor before it has a snapshot', async () => {
    const current = makeSnapshot([{ id: 1, parent: null }])
    const failing = start({ role: 'leader', current })
    failing.state.answer = 'failing'
    const other = start({ role: 'leader', current })
    other.state.recorded = { version: 3, fingerprint: 'theirs', owner: 'another instance' }
    const empty = start({ role: 'leader' })
    await polls(8)
    expect(failing.stored).toEqual([])
    expect(other.stored).toEqual([])
    expect(other.state.recorded).toEqual({ version: 3, fingerprint: 'theirs', owner: 'another instance' })
    expect(empty.stored).toEqual([])
    expect(empty.state.announced).toEqual([])
  })

  it('a leader leaves a snapshot it has just synced to the app, which is storing it, until the app announces it', async () => {
    const first = makeSnapshot([{ id: 1, parent: null }], {}, 1)
    const synced = makeSnapshot([{ id: 1, parent: null }, { id: 9, parent: 1 }], {}, 2)
    const leader = start({ role: 'leader', current: first })
    leader.state.recorded = { version: 1, fingerprint: first.fingerprint, owner: 'me' }
    await polls(2)
    // A sync swapped in a new snapshot; the app's save is under way, and nothing is recorded yet.
    leader.sync.current = synced
    leader.state.recorded = undefined
    await polls(6)
    expect(leader.stored).toEqual([])
    await leader.coordinator.announce(synced)
    expect(leader.state.recorded).toEqual({ version: 2, fingerprint: synced.fingerprint, owner: 'me' })
    await polls(4)
    expect(leader.stored).toEqual([])
  })

  it('a follower never stores: it loads the announcement it missed', async () => {
    const mine = makeSnapshot([{ id: 1, parent: null }], {}, 1)
    const theirs = makeSnapshot([{ id: 1, parent: null }, { id: 5, parent: 1 }], {}, 2)
    const follower = start({ role: 'follower', current: mine, shared: theirs })
    await polls(4)
    expect(follower.stored).toEqual([])
    follower.state.recorded = { version: 2, fingerprint: theirs.fingerprint, owner: 'leader' }
    for (let i = 0; i < 100 && follower.received.length === 0; i++) await sleep(5)
    expect(follower.received).toEqual([theirs])
    expect(follower.stored).toEqual([])
    expect(follower.state.announced).toEqual([])
  })

  it('a leader announces its snapshot again with the time of each sync that changed nothing, once it is stored', async () => {
    const first = makeSnapshot([{ id: 1, parent: null }], {}, 1)
    const leader = start({ role: 'leader', current: first })
    leader.state.recorded = { version: 1, fingerprint: first.fingerprint, owner: 'me' }
    leader.sync.status = { ...leader.sync.status, lastSuccessAt: 1_000 }
    await leader.coordinator.confirm()
    expect(leader.state.announced).toEqual([{ version: 1, fingerprint: first.fingerprint, owner: 'me', checkedAt: 1_000 }])
    // A snapshot the app is still saving is not announced by a check: followers would load the older one stored.
    const synced = makeSnapshot([{ id: 1, parent: null }, { id: 9, parent: 1 }], {}, 2)
    leader.sync.current = synced
    leader.sync.status = { ...leader.sync.status, lastSuccessAt: 2_000 }
    await leader.coordinator.confirm()
    expect(leader.state.announced).toHaveLength(1)
    await leader.coordinator.announce(synced)
    expect(leader.state.announced.at(-1)).toEqual({ version: 2, fingerprint: synced.fingerprint, owner: 'me', checkedAt: 2_000 })
    expect(leader.coordinator.confirmedAt).toBeUndefined()
  })

  it('a leader confirming into a Redis that lost everything stores its snapshot again instead of announcing it alone', async () => {
    const current = makeSnapshot([{ id: 1, parent: null }], {}, 4)
    // No poll in this test's time: only confirm() looks at Redis.
    const leader = start({ role: 'leader', current, pollMs: 60_000 })
    leader.sync.status = { ...leader.sync.status, lastSuccessAt: 9_000 }
    leader.state.answer = 'failing'
    await leader.coordinator.confirm()
    expect(leader.stored).toEqual([])
    leader.state.answer = 'recorded'
    await leader.coordinator.confirm()
    expect(leader.stored).toEqual([current])
    expect(leader.state.announced).toEqual([{ version: 4, fingerprint: current.fingerprint, owner: 'me', checkedAt: 9_000 }])
  })

  it('a follower takes the syncing instance\'s confirmations of the tree it serves, and forgets them when the tree changes', async () => {
    const mine = makeSnapshot([{ id: 1, parent: null }], {}, 1)
    const theirs = makeSnapshot([{ id: 1, parent: null }, { id: 5, parent: 1 }], {}, 2)
    const follower = start({ role: 'follower', current: mine, shared: theirs })
    expect(follower.coordinator.confirmedAt).toBeUndefined()
    follower.state.recorded = { version: 1, fingerprint: mine.fingerprint, owner: 'leader', checkedAt: 5_000 }
    for (let i = 0; i < 100 && follower.coordinator.confirmedAt === undefined; i++) await sleep(5)
    expect(follower.coordinator.confirmedAt).toBe(5_000)
    // An older confirmation arriving late does not move it back.
    follower.state.recorded = { version: 1, fingerprint: mine.fingerprint, owner: 'leader', checkedAt: 4_000 }
    await polls(3)
    expect(follower.coordinator.confirmedAt).toBe(5_000)
    // A new tree: loaded, and its age starts from its own sync until the leader confirms it.
    follower.state.recorded = { version: 2, fingerprint: theirs.fingerprint, owner: 'leader' }
    for (let i = 0; i < 100 && follower.received.length === 0; i++) await sleep(5)
    expect(follower.received).toEqual([theirs])
    await polls(3)
    expect(follower.coordinator.confirmedAt).toBeUndefined()
    follower.state.recorded = { version: 2, fingerprint: theirs.fingerprint, owner: 'leader', checkedAt: 6_000 }
    for (let i = 0; i < 100 && follower.coordinator.confirmedAt !== 6_000; i++) await sleep(5)
    expect(follower.coordinator.confirmedAt).toBe(6_000)
    expect(follower.state.announced).toEqual([])
  })

  it('a leader reads the listing when its pub/sub connection is back, for the refresh requests sent meanwhile; a follower does not', async () => {
    const leader = start({ role: 'leader', current: makeSnapshot([{ id: 1, parent: null }]) })
    const follower = start({ role: 'follower', current: makeSnapshot([{ id: 1, parent: null }]) })
    for (const each of [leader, follower]) for (const listener of each.state.reconnected) listener()
    expect(leader.refreshed).toEqual([{ listing: true, reason: 'pub/sub reconnected' }])
    expect(follower.refreshed).toEqual([])
    await leader.coordinator.stop()
    expect(leader.state.reconnected).toEqual([])
  })

  it('a standalone instance leaves Redis alone', async () => {
    const standalone = start({ role: 'standalone', current: makeSnapshot([{ id: 1, parent: null }]) })
    await polls(6)
    expect(standalone.stored).toEqual([])
    expect(standalone.state.announced).toEqual([])
  })

  it('closes the channel on stop, so its subscriptions stop being retried', async () => {
    const { coordinator, state } = start({ role: 'follower' })
    await coordinator.stop()
    expect(state.closed).toBe(true)
  })
})

describe('snapshots stored as patches', () => {
  it('a leader names the patch a snapshot was stored as in each announcement of it, until it stores it whole again', async () => {
    const base = makeSnapshot([{ id: 1, parent: null }], {}, 1)
    const next = makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }], {}, 2)
    const leader = start({ role: 'leader', current: next })
    await leader.coordinator.announce(next, { fingerprint: next.fingerprint, patch: { from: base.fingerprint, index: 3 } })
    expect(leader.state.announced.at(-1)).toEqual({ version: 2, fingerprint: next.fingerprint, owner: 'me', patch: { from: base.fingerprint, index: 3 } })
    await leader.coordinator.confirm()
    expect(leader.state.announced.at(-1)?.patch).toEqual({ from: base.fingerprint, index: 3 })
    // A save that stored a newer snapshot instead: nothing is announced for this one.
    const count = leader.state.announced.length
    await leader.coordinator.announce(base, { fingerprint: next.fingerprint })
    expect(leader.state.announced).toHaveLength(count)
    // Redis lost it: stored whole, announced without a patch.
    leader.state.recorded = undefined
    for (let i = 0; i < 100 && leader.stored.length === 0; i++) await sleep(5)
    await polls(2)
    expect(leader.state.announced.at(-1)).toEqual({ version: 2, fingerprint: next.fingerprint, owner: 'me' })
  })

  it('a follower whose load reached the snapshot announced meanwhile does not load it again', async () => {
    const base = makeSnapshot([{ id: 1, parent: null }], {}, 1)
    const middle = makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }], {}, 2)
    const newest = makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }, { id: 3, parent: 1 }], {}, 3)
    let release: () => void = () => undefined
    const slow = new Promise<void>((resolve) => (release = resolve))
    // The load for the first announcement reads every patch stored by the time it reads: it ends on the newest.
    const follower = start({ role: 'follower', current: base, load: async () => (await slow, newest) })
    follower.state.recorded = { version: 2, fingerprint: middle.fingerprint, owner: 'leader', patch: { from: base.fingerprint, index: 0 } }
    for (let i = 0; i < 100 && follower.asked.length === 0; i++) await sleep(5)
    // Announced while that load runs: the coordinator keeps it for after the load.
    follower.state.recorded = { version: 3, fingerprint: newest.fingerprint, owner: 'leader', patch: { from: middle.fingerprint, index: 1 } }
    await polls(3)
    release()
    for (let i = 0; i < 100 && follower.received.length === 0; i++) await sleep(5)
    await polls(3)
    expect(follower.sync.current).toBe(newest)
    expect(follower.asked.map((announcement) => announcement?.version)).toEqual([2])
    expect(follower.received).toEqual([newest])
  })

  it('a follower hands the announcement it missed to the load, so a patch can be read instead of the whole snapshot', async () => {
    const base = makeSnapshot([{ id: 1, parent: null }], {}, 1)
    const next = makeSnapshot([{ id: 1, parent: null }, { id: 2, parent: 1 }], {}, 2)
    const follower = start({ role: 'follower', current: base, shared: next })
    const announcement = { version: 2, fingerprint: next.fingerprint, owner: 'leader', patch: { from: base.fingerprint, index: 0 } }
    follower.state.recorded = announcement
    for (let i = 0; i < 100 && follower.received.length === 0; i++) await sleep(5)
    expect(follower.asked[0]).toEqual(announcement)
    expect(follower.sync.current).toBe(next)
  })
})
