/**
 * Many instances, one CMS load (docs/architecture.md#the-cluster). With Redis, the instance
 * holding the lease runs the sync loop, stores each new snapshot in Redis and announces it; the
 * others load it from Redis, never from the CMS, and send the PURGE and webhook requests they
 * receive to the syncing one over pub/sub. When Redis cannot say who leads ('standalone'), every
 * instance syncs on its own so that none serves an ageing tree while Redis is down.
 *
 * The shared copy must survive Redis losing it: a Redis restarted empty (it keeps nothing on disk),
 * or one that was down while the instance synced standalone, holds no snapshot, and a snapshot is
 * otherwise stored only when the tree changes — so a follower starting then would have nothing to
 * serve. The leader therefore checks on every poll that an announcement is recorded, and when
 * Redis answers that none is, stores and announces its current snapshot again.
 * @module
 */
import type { ClusterChannel, SnapshotAnnouncement } from './cluster-channel.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { LeaderLease, LeaseRole } from './leader-lease.js'
import type { RefreshRequest } from '../sync/refresh-request.js'
import type { Timers } from '../timers.js'
import type { SyncService } from '../sync/sync-service.js'
import type { LogSink } from '../observability/log-sink.js'

export type CoordinatorLogger = Pick<LogSink, 'info' | 'warn'>

export interface ClusterCoordinatorOptions {
  readonly sync: SyncService
  readonly lease: LeaderLease
  readonly channel: ClusterChannel
  /**
   * Reads and rebuilds the snapshot the syncing instance stored; `undefined` when there is none
   * usable. Given the announcement that asked for it, so that a follower serving the base of an
   * announced patch reads the patch, not the whole snapshot.
   */
  readonly loadShared: (announcement?: SnapshotAnnouncement) => Promise<Snapshot | undefined>
  /**
   * Stores a snapshot where `loadShared` reads it (the app's persistence). Without it the leader
   * cannot put back a snapshot Redis lost, and followers wait for the next change of the tree.
   */
  readonly storeShared?: (snapshot: Snapshot) => Promise<void>
  /**
   * The other endpoints' answer generations (`endpoint-generations.ts`): renewed by a PURGE on any
   * instance, adopted by all. Without it, endpoint generations stay this instance's own.
   */
  readonly endpointGenerations?: { readonly endpoints: readonly string[]; adopt(endpoint: string, generation: string): void; settle(endpoint: string, recorded: string | undefined): void }
  /** How often a follower checks the recorded announcement (in case it missed a message), and the leader that one is recorded. */
  readonly pollMs: number
  readonly timers: Timers
  readonly logger: CoordinatorLogger
}

export interface ClusterCoordinator {
  readonly role: LeaseRole
  /** Starts the lease, the channel listeners and the follower's check. */
  start(): void
  /** Routes a PURGE or webhook request to the instance that syncs. */
  requestRefresh(request: RefreshRequest): void
  /** Tells every instance, and those that start later, of an endpoint's new answer generation. */
  shareEndpointGeneration(endpoint: string, generation: string): Promise<void>
  /**
   * Call after this instance stored a snapshot it synced: tells the others (and, when it was
   * stored as a patch, which one). Nothing is announced for a snapshot whose save stored a newer
   * one instead: that one's own call announces it.
   */
  announce(snapshot: Snapshot, saved?: { readonly fingerprint: string; readonly patch?: SnapshotAnnouncement['patch'] }): Promise<void>
  /**
   * Call after a sync that changed nothing: the syncing instance announces its snapshot again with
   * the time of that sync, so followers know the CMS still has this tree (`confirmedAt`).
   */
  confirm(): Promise<void>
  /**
   * On a follower: when the syncing instance last confirmed the tree this one serves (its last
   * good sync, ms since the epoch); `undefined` until it has said so for this tree.
   */
  readonly confirmedAt: number | undefined
  /** Stops everything and releases the lease. */
  stop(): Promise<void>
}

export function createClusterCoordinator(options: ClusterCoordinatorOptions): ClusterCoordinator {
  const { sync, lease, channel, logger, timers } = options
  const owner = lease.owner
  const syncs = (role: LeaseRole) => role === 'leader' || role === 'standalone'
  let stopped = false
  let pollTimer: unknown
  /** One load at a time; an announcement during a load is checked again after it. */
  let loading: Promise<void> | undefined
  let again = false
  /** The newest announcement that asked for a load. */
  let wanted: SnapshotAnnouncement | undefined
  /** How the last snapshot this instance announced was stored, repeated with each announcement of it. */
  let storedAs: { readonly fingerprint: string; readonly patch: NonNullable<SnapshotAnnouncement['patch']> } | undefined
  const unsubscribe: Array<() => void> = []
  /**
   * The fingerprint of a snapshot nobody is storing now: the one served at start (adopted from
   * storage), one received from the leader, or one the app has stored and announced. A snapshot
   * this instance has just synced is being stored by the app until it calls `announce()`; the
   * leader does not store it a second time meanwhile.
   */
  let settled: string | undefined
  let confirmedAt: number | undefined

  function isNew(announcement: SnapshotAnnouncement): boolean {
    return announcement.owner !== owner && announcement.fingerprint !== sync.current?.fingerprint
  }

  function announcementOf(snapshot: Snapshot): SnapshotAnnouncement {
    const checkedAt = sync.status.lastSuccessAt
    return {
      version: snapshot.version, fingerprint: snapshot.fingerprint, owner,
      ...(checkedAt === undefined ? {} : { checkedAt }),
      ...(storedAs?.fingerprint === snapshot.fingerprint ? { patch: storedAs.patch } : {}),
    }
  }

  async function loadOnce(): Promise<void> {
    const announcement = wanted
    wanted = undefined
    // Asked for again during the load before, which may have reached it already: the patches it
    // read run to the newest stored, and loading that again would read the whole snapshot.
    if (announcement !== undefined && !isNew(announcement)) return
    const snapshot = await options.loadShared(announcement)
    if (!snapshot) return
    if (!sync.receive(snapshot)) return
    settled = snapshot.fingerprint
    // A confirmation was for the tree served before; this one's age starts at its own sync.
    confirmedAt = undefined
    logger.info({ version: snapshot.version, pages: snapshot.pages.length }, 'cluster: serving the snapshot the syncing instance stored')
  }

  function load(announcement?: SnapshotAnnouncement): void {
    wanted = announcement ?? wanted
    if (loading) {
      again = true
      return
    }
    loading = loadOnce()
      .catch((error: unknown) => logger.warn({ err: error }, 'cluster: could not load the shared snapshot'))
      .finally(() => {
        loading = undefined
        if (again && !stopped) {
          again = false
          load()
        }
      })
  }

  function onAnnouncement(announcement: SnapshotAnnouncement): void {
    if (stopped || syncs(lease.role)) return
    const { checkedAt } = announcement
    if (announcement.fingerprint === sync.current?.fingerprint) {
      if (checkedAt !== undefined && checkedAt > (confirmedAt ?? 0)) confirmedAt = checkedAt
      return
    }
    if (isNew(announcement)) load(announcement)
  }

  /** The leader's snapshot, stored and announced again because Redis has none recorded. */
  async function restore(): Promise<void> {
    const snapshot = sync.current
    if (!snapshot || snapshot.fingerprint !== settled || !options.storeShared) return
    await options.storeShared(snapshot)
    // Stored whole now (its patch log emptied): followers on other bases load it whole.
    storedAs = undefined
    if (stopped || lease.role !== 'leader') return
    if (await channel.announceSnapshot(announcementOf(snapshot))) {
      logger.info({ version: snapshot.version, pages: snapshot.pages.length }, 'cluster: Redis held no snapshot; stored this leader\'s again')
    }
  }

  /** A follower looks for an announcement it missed; the leader makes sure one is recorded. */
  async function check(): Promise<void> {
    const role = lease.role
    if (role === 'standalone') return
    const recorded = await channel.recordedSnapshot()
    if (!recorded.ok || stopped) return
    if (role === 'follower') {
      if (recorded.announcement) onAnnouncement(recorded.announcement)
    } else if (!recorded.announcement && lease.role === 'leader') {
      await restore()
    }
  }

  function poll(): void {
    pollTimer = timers.setTimeout(() => {
      pollTimer = undefined
      if (stopped) return
      void check()
        .catch((error: unknown) => logger.warn({ err: error }, 'cluster: checking the recorded snapshot failed'))
        .finally(() => {
          if (!stopped) poll()
        })
    }, options.pollMs)
  }

  function readEndpointGenerations(): void {
    for (const endpoint of options.endpointGenerations?.endpoints ?? []) {
      void channel.endpointGeneration(endpoint).then((recorded) => {
        if (stopped || recorded === null) return
        options.endpointGenerations?.settle(endpoint, recorded)
      })
    }
  }

  return {
    get role() {
      return lease.role
    },
    start() {
      settled = sync.current?.fingerprint
      unsubscribe.push(channel.onSnapshot(onAnnouncement))
      unsubscribe.push(channel.onRefresh((message) => {
        if (stopped || message.from === owner) return
        for (const [endpoint, generation] of Object.entries(message.endpoints ?? {})) options.endpointGenerations?.adopt(endpoint, generation)
        const refreshes = message.ids !== undefined || message.all === true || message.listing === true
        if (refreshes && syncs(lease.role)) sync.refresh(message)
      }))
      // Generations renewed before this instance listened, or while its subscriber was away.
      void channel.ready().then(readEndpointGenerations)
      unsubscribe.push(channel.onReconnected(readEndpointGenerations))
      // PURGEs and webhooks sent to the leader while its subscriber was reconnecting are lost: a
      // listing pass catches the moves, renames and new pages among them (content-only edits
      // wait for the next full sync, as a lost webhook would).
      unsubscribe.push(channel.onReconnected(() => {
        if (stopped || lease.role !== 'leader') return
        logger.info({}, 'cluster: pub/sub reconnected; reading the listing for refresh requests it may have missed')
        sync.refresh({ listing: true, reason: 'pub/sub reconnected' })
      }))
      lease.start()
      poll()
    },
    requestRefresh(request) {
      if (syncs(lease.role)) return sync.refresh(request)
      void channel.publishRefresh({ ...request, from: owner }).then((receivers) => {
        // Redis failed between two lease ticks: this instance will sync on its own at the next one.
        if (receivers < 0) sync.refresh(request)
      })
    },
    async shareEndpointGeneration(endpoint, generation) {
      if (stopped) return
      await channel.recordEndpointGeneration(endpoint, generation)
      await channel.publishRefresh({ endpoints: { [endpoint]: generation }, reason: 'purge', from: owner })
    },
    async announce(snapshot, saved) {
      if (saved && saved.fingerprint !== snapshot.fingerprint) return
      storedAs = saved?.patch ? { fingerprint: snapshot.fingerprint, patch: saved.patch } : undefined
      settled = snapshot.fingerprint
      if (stopped || !syncs(lease.role)) return
      await channel.announceSnapshot(announcementOf(snapshot))
    },
    async confirm() {
      const snapshot = sync.current
      // Only a snapshot already stored and announced: one still being saved is announced, with
      // the newest sync time, when its save ends; announcing it now would send followers to
      // load the older one stored. A standalone instance has nobody to tell (Redis is down).
      if (stopped || lease.role !== 'leader' || !snapshot || snapshot.fingerprint !== settled) return
      const recorded = await channel.recordedSnapshot()
      if (!recorded.ok || stopped || lease.role !== 'leader') return
      // Nothing recorded: Redis lost the stored snapshot with it, and an announcement alone would
      // point followers at nothing; store it again first.
      if (!recorded.announcement) return restore()
      if (recorded.announcement.fingerprint === snapshot.fingerprint) await channel.announceSnapshot(announcementOf(snapshot))
    },
    get confirmedAt() {
      return lease.role === 'follower' ? confirmedAt : undefined
    },
    async stop() {
      stopped = true
      if (pollTimer !== undefined) timers.clearTimeout(pollTimer)
      for (const off of unsubscribe.splice(0)) off()
      // Stops retrying its subscriptions, which would otherwise go on after Redis is closed.
      channel.close()
      await lease.stop()
      await loading
    },
  }
}

/** What the lease's role means for the sync loop: run it, or leave syncing to the leader. */
export function followRole(sync: SyncService, role: LeaseRole, logger: CoordinatorLogger): void {
  if (role === 'leader' || role === 'standalone') {
    logger.info({ role }, role === 'leader' ? 'cluster: this instance syncs (it holds the lease)' : 'cluster: Redis cannot say who syncs; this instance syncs on its own')
    sync.start()
  } else {
    logger.info({ role }, 'cluster: another instance syncs; this one follows its snapshots')
    void sync.stop()
  }
}
