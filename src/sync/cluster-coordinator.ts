/**
 * Many instances, one CMS load (design.md: "exactly one instance syncs"). With Redis, the instance
 * holding the lease runs the sync loop, stores each new snapshot in Redis and announces it; the
 * others load it from Redis, never from the CMS, and send the PURGE and webhook requests they
 * receive to the syncing one over pub/sub. When Redis cannot say who leads ('standalone'), every
 * instance syncs on its own so that none serves an ageing tree while Redis is down.
 * @module
 */
import type { ClusterChannel, SnapshotAnnouncement } from '../cache/cluster-channel.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { LeaderLease, LeaseRole } from './leader-lease.js'
import type { RefreshRequest } from './refresh-request.js'
import type { SyncService, Timers } from './sync-service.js'
import type { LogSink } from '../observability/log-sink.js'

export type CoordinatorLogger = Pick<LogSink, 'info' | 'warn'>

export interface ClusterCoordinatorOptions {
  readonly sync: SyncService
  readonly lease: LeaderLease
  readonly channel: ClusterChannel
  /** Reads and rebuilds the snapshot the syncing instance stored; `undefined` when there is none usable. */
  readonly loadShared: () => Promise<Snapshot | undefined>
  /** How often a follower checks the recorded announcement, in case it missed a message. */
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
  /** Call after this instance stored a snapshot it synced: tells the others. */
  announce(snapshot: Snapshot): Promise<void>
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
  const unsubscribe: Array<() => void> = []

  function isNew(announcement: SnapshotAnnouncement): boolean {
    return announcement.owner !== owner && announcement.fingerprint !== sync.current?.fingerprint
  }

  async function loadOnce(): Promise<void> {
    const snapshot = await options.loadShared()
    if (!snapshot) return
    if (sync.receive(snapshot)) logger.info({ version: snapshot.version, pages: snapshot.pages.length }, 'cluster: serving the snapshot the syncing instance stored')
  }

  function load(): void {
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
    if (stopped || syncs(lease.role) || !isNew(announcement)) return
    load()
  }

  function poll(): void {
    pollTimer = timers.setTimeout(() => {
      pollTimer = undefined
      if (stopped) return
      const check = syncs(lease.role) ? Promise.resolve() : channel.latestSnapshot().then((latest) => {
        if (latest) onAnnouncement(latest)
      })
      void check.finally(() => {
        if (!stopped) poll()
      })
    }, options.pollMs)
  }

  return {
    get role() {
      return lease.role
    },
    start() {
      unsubscribe.push(channel.onSnapshot(onAnnouncement))
      unsubscribe.push(channel.onRefresh((message) => {
        if (stopped || !syncs(lease.role) || message.from === owner) return
        sync.refresh(message)
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
    async announce(snapshot) {
      if (stopped || !syncs(lease.role)) return
      await channel.announceSnapshot({ version: snapshot.version, fingerprint: snapshot.fingerprint, owner })
    },
    async stop() {
      stopped = true
      if (pollTimer !== undefined) timers.clearTimeout(pollTimer)
      for (const off of unsubscribe.splice(0)) off()
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
