/**
 * The lifecycle: on ready, a warm start from the newest stored snapshot, then the sync (or the
 * cluster, which decides who syncs); on close, the lease released first, then everything else.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config/load-config.js'
import type { Metrics } from '../observability/metrics.js'
import type { SnapshotPersistence } from '../persist/snapshot-persistence.js'
import type { ClusterCoordinator } from '../cluster/cluster-coordinator.js'
import type { ServedVersions } from '../cluster/served-versions.js'
import type { SyncService } from '../sync/sync-service.js'
import type { CacheParts } from './caches.js'

export interface LifecycleOptions {
  readonly config: Config
  readonly sync: SyncService
  readonly shared: CacheParts['shared']
  readonly persistence: SnapshotPersistence | undefined
  readonly cluster: ClusterCoordinator | undefined
  /** With Redis: this instance's record of the snapshot it serves, kept while the cluster runs. */
  readonly served: ServedVersions | undefined
  readonly metrics: Metrics
  readonly closeUpstream: () => Promise<void>
  /** Stops CDN purges: queued keys are dropped, requests in flight aborted. */
  readonly closeCdn: () => Promise<void>
  /** Start syncing when ready (tests may sync themselves). */
  readonly autoSync: boolean
}

export function registerLifecycle(app: FastifyInstance, options: LifecycleOptions): void {
  const { config, sync, shared, persistence, cluster } = options
  app.addHook('onReady', async () => {
    // Warm start: serve the newest stored snapshot at once, then sync in the background.
    if (persistence) {
      if (shared) await shared.waitUntilUp(Math.min(1000, config.redisCommandTimeoutMs * 4))
      const loaded = await persistence.loadNewest()
      if (loaded && sync.adopt(loaded.snapshot)) {
        app.log.info({ source: loaded.source, version: loaded.snapshot.version, pages: loaded.snapshot.pages.length }, 'serving a stored snapshot')
      }
    }
    if (!options.autoSync) return
    if (cluster) {
      options.served?.start()
      cluster.start()
    } else {
      sync.start()
    }
  })
  app.addHook('onClose', async () => {
    // Nobody waits for what this instance served any more; then the lease goes, so another
    // instance takes over at its next tick.
    await options.served?.stop()
    await cluster?.stop()
    options.metrics.close()
    await sync.stop()
    await options.closeCdn()
    await options.closeUpstream()
    await shared?.close()
  })
}
