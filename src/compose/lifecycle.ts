/**
 * The lifecycle: on ready, each Site's tree starts warm from the newest stored snapshot, then its
 * sync runs (or its cluster, which decides who syncs); on close, the leases are released first,
 * then everything else.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config/load-config.js'
import type { Metrics } from '../observability/metrics.js'
import type { CacheParts } from './caches.js'
import type { SiteCore } from './site-core.js'

export interface LifecycleOptions {
  readonly config: Config
  /** The default Site's tree first, then the other Sites' (`site-core.ts`). */
  readonly cores: readonly SiteCore[]
  readonly shared: CacheParts['shared']
  readonly metrics: Metrics
  readonly closeUpstream: () => Promise<void>
  /** Start syncing when ready (tests may sync themselves). */
  readonly autoSync: boolean
}

/** Warm start: serve the newest stored snapshot at once, then sync in the background. */
async function startCore(app: FastifyInstance, core: SiteCore, autoSync: boolean): Promise<void> {
  const { sync, persistence, cluster } = core
  if (persistence) {
    const loaded = await persistence.loadNewest()
    if (loaded && sync.adopt(loaded.snapshot)) {
      app.log.info({ site: core.site, source: loaded.source, version: loaded.snapshot.version, pages: loaded.snapshot.pages.length }, 'serving a stored snapshot')
    }
  }
  if (!autoSync) return
  if (cluster) {
    core.served?.start()
    cluster.start()
  } else {
    sync.start()
  }
}

/** Nobody waits for what this instance served any more; then the lease goes, so another instance takes over at its next tick. */
async function stopCore(core: SiteCore): Promise<void> {
  await core.served?.stop()
  await core.cluster?.stop()
}

export function registerLifecycle(app: FastifyInstance, options: LifecycleOptions): void {
  const { config, cores, shared } = options
  app.addHook('onReady', async () => {
    if (shared && cores.some((core) => core.persistence)) await shared.waitUntilUp(Math.min(1000, config.redisCommandTimeoutMs * 4))
    await Promise.all(cores.map((core) => startCore(app, core, options.autoSync)))
  })
  app.addHook('onClose', async () => {
    for (const core of cores) await stopCore(core)
    options.metrics.close()
    for (const core of cores) await core.sync.stop()
    // Stops CDN purges: queued keys are dropped, requests in flight aborted (the cores share one queue).
    for (const core of cores) await core.afterSwap.close()
    await options.closeUpstream()
    await shared?.close()
  })
}
