/**
 * The sync part: the loop that keeps the snapshot, and what follows each run and each swap (the
 * tree diff's log line, the events); what follows a swap this instance synced (storing,
 * announcing, purging) is `compose/after-swap.ts`.
 * @module
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/load-config.js'
import type { ShieldEvents } from '../observability/shield-events.js'
import type { ClusterCoordinator } from '../cluster/cluster-coordinator.js'
import { createSyncService, type SyncResult, type SyncService } from '../sync/sync-service.js'
import type { TwinLookup } from '../tree/build-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'
import { diffSnapshots, type TreeChange } from '../tree/tree-diff.js'
import { mountOf } from '../config/api-mount.js'
import type { SyncedSwap } from './after-swap.js'
import type { Clock } from './clock.js'
import { AFTER_LOAD_DELAY_MS, createHeapReclaimer, reclaimHeap, skipReclaim } from './reclaim-heap.js'
import type { UpstreamParts } from './upstream.js'

export interface SyncOptions {
  readonly config: Config
  readonly upstream: Pick<UpstreamParts, 'get' | 'rewriteUrl'>
  /** Read when a run ends: the cluster is built from the sync (`app.ts` connects it in phase 2). */
  readonly cluster: () => ClusterCoordinator | undefined
  readonly logger: FastifyBaseLogger
  readonly events: ShieldEvents
  readonly clock: Clock
  /** At each swap of a snapshot this instance synced: the after-swap pipeline (`compose/after-swap.ts`). */
  readonly onSyncedSwap?: (swap: SyncedSwap) => void
  /** Pages other Sites' trees hold with the same bytes (`compose/shared-pages.ts`). */
  readonly twinOf?: TwinLookup
}

export function composeSync(options: SyncOptions): SyncService {
  const { config, logger, events, cluster } = options
  const reclaimOnce = createHeapReclaimer({ logger, reclaim: config.privateApis ? reclaimHeap : skipReclaim })
  return createSyncService({
    get: options.upstream.get,
    pagesPath: mountOf(config).pagesPath,
    rewriteUrl: options.upstream.rewriteUrl,
    concurrency: config.syncConcurrency,
    deriveUrls: config.syncDeriveUrls,
    intervalMs: config.syncIntervalMs,
    fullIntervalMs: config.fullSyncIntervalMs,
    // One CMS serves every Site: SYNC_BUDGET is what they spend together.
    budget: config.syncBudget / (1 + config.sites.length),
    debounceMs: config.refreshDebounceMs,
    retryMaxMs: config.syncRetryMaxMs,
    ...(options.twinOf ? { twinOf: options.twinOf } : {}),
    logger,
    ...options.clock,
    onSyncEnd: (result) => {
      if (result.ok && !result.changed) void cluster()?.confirm()
      events.emit('sync', syncEvent(result))
      if (result.ok && result.mode === 'full') reclaimOnce(result.pages, 'the first full sync')
    },
    onSnapshot: (snapshot, previous, source) => {
      const change = diffSnapshots(previous, snapshot)
      logTreeChange(logger, change, snapshot, source)
      events.emit('snapshot', {
        version: snapshot.version,
        fingerprint: snapshot.fingerprint,
        pages: snapshot.pages.length,
        syncedAt: snapshot.syncedAt,
        source,
        changedPages: change.added.length + change.removed.length + new Set([...change.changed, ...change.moved]).size,
      })
      // Only what this instance synced is stored, announced and purged; the others' is already in Redis.
      if (source !== 'sync') {
        if (previous === undefined) reclaimOnce(snapshot.pages.length, 'loading the first snapshot', AFTER_LOAD_DELAY_MS)
        return
      }
      options.onSyncedSwap?.({ purgeKeys: change.purgeKeys, snapshot, swappedAt: options.clock.now() })
    },
  })
}

function syncEvent(result: SyncResult) {
  return {
    mode: result.mode,
    result: !result.ok ? 'failed' as const : result.changed ? 'changed' as const : 'unchanged' as const,
    durationMs: result.durationMs,
    detailsFetched: result.ok ? result.detailsFetched : 0,
    pages: result.ok ? result.pages : 0,
    ...(result.ok ? {} : { code: result.code }),
  }
}

/** Most purge keys one log line lists; the count is always there. */
const LOGGED_PURGE_KEYS = 100

/**
 * One line per swapped-in snapshot: what changed, and the `Surrogate-Key`/`Cache-Tag` keys a CDN
 * in front must purge (derived from the tree diff: Wagtail itself never purges lists or moves).
 */
function logTreeChange(logger: FastifyBaseLogger, change: TreeChange, snapshot: Snapshot, source: string): void {
  logger.info(
    {
      source,
      version: snapshot.version,
      pages: snapshot.pages.length,
      added: change.added.length,
      removed: change.removed.length,
      changed: change.changed.length,
      moved: change.moved.length,
      purgeKeyCount: change.purgeKeys.length,
      purgeKeys: change.purgeKeys.slice(0, LOGGED_PURGE_KEYS),
    },
    'snapshot: swapped in',
  )
}
