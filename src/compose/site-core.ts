/**
 * Everything that keeps one Site's tree (docs/architecture.md#several-sites): its sync, where its
 * snapshots are kept, who syncs it among the instances sharing a Redis, and what follows each swap
 * (save, announce, wait until every instance serves it, purge the CDN). The CMS's default Site has
 * one; each of its other Sites (SITES) has its own, asking the CMS as that Site (`Host`), with its
 * Redis keys, lease and channels under a prefix of its own and its snapshot file beside the
 * default one's, so that each Site's listing is walked once per interval whatever the number of
 * instances, and a Site's edits travel and purge as the default Site's do.
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { EndpointGenerations } from '../cache/endpoint-generations.js'
import type { SharedTier } from '../cache/shared-tier.js'
import type { ClusterCoordinator } from '../cluster/cluster-coordinator.js'
import type { ServedVersions } from '../cluster/served-versions.js'
import type { Config } from '../config/load-config.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import type { SnapshotPersistence } from '../persist/snapshot-persistence.js'
import type { RefreshRequest } from '../sync/refresh-request.js'
import type { SyncService } from '../sync/sync-service.js'
import { createAfterSwap, OPEN_GATE, type AfterSwap, type AfterSwapSteps } from './after-swap.js'
import type { Clock } from './clock.js'
import { composeCluster } from './cluster.js'
import { assertConnected, late } from './late.js'
import { composePersistence } from './persistence.js'
import { composeServed, servedPurgeGate } from './served.js'
import type { SharedPages } from './shared-pages.js'
import { composeSync } from './sync.js'
import type { UpstreamParts } from './upstream.js'

export interface SiteCore {
  /** The Site's hostname; `undefined` for the CMS's default Site. */
  readonly site: string | undefined
  readonly config: Config
  readonly sync: SyncService
  readonly persistence: SnapshotPersistence | undefined
  readonly cluster: ClusterCoordinator | undefined
  readonly served: ServedVersions | undefined
  readonly afterSwap: AfterSwap
  /** Where this Site's PURGE and webhook refreshes go: this instance's sync, or the one that syncs. */
  requestRefresh(request: RefreshRequest): void
}

export interface SiteCoreOptions {
  /** Undefined for the default Site. */
  readonly site: string | undefined
  readonly config: Config
  readonly upstream: Pick<UpstreamParts, 'get' | 'getAs' | 'rewriteUrl'>
  readonly shared: SharedTier | undefined
  readonly owner: string
  /** The default Site's cluster shares the other endpoints' generations; other Sites' share none. */
  readonly endpointGenerations: Pick<EndpointGenerations, 'adopt' | 'settle'>
  readonly purge: AfterSwapSteps['purge']
  readonly logger: FastifyBaseLogger
  /** This Site's own: a swap of one Site's tree says nothing about another's. */
  readonly events: ShieldEvents
  readonly clock: Clock
  /** Every Site's tree, so that a page several of them hold is stored once (`shared-pages.ts`). */
  readonly sharedPages?: SharedPages
}

/**
 * The configuration another Site's parts read: its Redis keys under `<REDIS_PREFIX>site:<hostname>:`,
 * its snapshot file at `<SNAPSHOT_FILE>.<hostname>`, and no endpoints or Sites of its own.
 */
export function siteConfig(config: Config, site: string): Config {
  return Object.freeze({
    ...config,
    redisPrefix: `${config.redisPrefix}site:${site}:`,
    snapshotFile: config.snapshotFile === undefined ? undefined : `${config.snapshotFile}.${site}`,
    apiEndpoints: [],
    sites: [],
  })
}

export function composeSiteCore(options: SiteCoreOptions): SiteCore {
  const { site, config, shared, logger, events, clock } = options
  const held = { cluster: late<ClusterCoordinator | undefined>('the Site\'s cluster'), afterSwap: late<AfterSwap>('the Site\'s after-swap pipeline') }
  const sharedHere = shared && site !== undefined ? { ...shared, snapshotTarget: shared.snapshotTargetFor(config.redisPrefix) } : shared
  const persistence = composePersistence(config, sharedHere, logger, clock.now)
  const upstream = site === undefined ? options.upstream : { ...options.upstream, get: options.upstream.getAs(site) }
  const current = () => sync.current
  const sync = composeSync({
    config, upstream, cluster: held.cluster.get, logger, events, clock, onSyncedSwap: (swap) => held.afterSwap.get().run(swap),
    ...(options.sharedPages ? { twinOf: options.sharedPages.twinOf(current) } : {}),
  })
  options.sharedPages?.register(current)
  const cluster = sharedHere
    ? composeCluster({ config, owner: options.owner, shared: sharedHere, sync, persistence, endpointGenerations: options.endpointGenerations, logger, events, clock })
    : undefined
  const served = sharedHere ? composeServed({ config, shared: sharedHere, owner: options.owner, events, logger, clock }) : undefined
  // Without Redis the open gate: the one instance serves what it synced the moment it swaps.
  const gate = served && cluster ? servedPurgeGate(served, cluster, config.cdnPurgeWaitMs, logger, events) : OPEN_GATE
  const afterSwap = createAfterSwap({
    save: persistence ? (snapshot) => persistence.save(snapshot) : undefined,
    announce: (snapshot, saved) => cluster?.announce(snapshot, saved),
    gate,
    purge: options.purge,
  }, logger)
  held.cluster.set(cluster)
  held.afterSwap.set(afterSwap)
  assertConnected(held)
  return {
    site, config, sync, persistence, cluster, served, afterSwap,
    requestRefresh: (request) => (cluster ? cluster.requestRefresh(request) : sync.refresh(request)),
  }
}
