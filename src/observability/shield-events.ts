/**
 * What cms-shield reports as it runs: one hub per app (`app.shield.events`), fed by the HTTP
 * layer, the CMS client, the sync and the cluster; read by metrics (`metrics.ts`) and logs.
 * Cache tiers report through the same kind of hub, with their own events (`store-events.ts`).
 * @module
 */
import { createEventHub, type EventHub } from './event-hub.js'

/** Where an answer came from: the snapshot, the read-through cache (by outcome), or nowhere (errors, health). */
export type CacheOutcome = 'snapshot' | 'hit' | 'miss' | 'coalesced' | 'stale' | 'stale-error' | 'stale-budget' | 'none'

export type RouteName = 'list' | 'detail' | 'find' | 'purge' | 'refresh' | 'healthz' | 'readyz' | 'metrics' | 'other'

export type UpstreamKind = 'list' | 'detail' | 'find' | 'other'

/**
 * Who caused a CMS request: the scheduled `sync`, a `refresh` asked for by PURGE or the webhook,
 * or a client's query the snapshot cannot answer (`read_through`, the only class under a budget).
 */
export type TrafficClass = 'sync' | 'refresh' | 'read_through'

export interface ShieldEventMap {
  /** One per HTTP request, when its response has been sent. */
  readonly request: {
    readonly route: RouteName
    readonly method: string
    readonly status: number
    readonly cache: CacheOutcome
    readonly durationMs: number
  }
  /** One per attempt at a CMS request (retries count separately). */
  readonly upstream: {
    readonly kind: UpstreamKind
    readonly trafficClass: TrafficClass
    /** The HTTP status, or `error` (network, reset, oversize) or `timeout`. */
    readonly status: number | 'error' | 'timeout'
    readonly durationMs: number
  }
  /** One per sync attempt. */
  readonly sync: {
    readonly mode: 'full' | 'incremental'
    readonly result: 'changed' | 'unchanged' | 'failed'
    readonly durationMs: number
    readonly detailsFetched: number
    readonly pages: number
    /** Why a failed sync failed: its error code. */
    readonly code?: string
  }
  /** A new snapshot is served (`sync`: this instance synced it; `peer`: loaded from the one that syncs). */
  readonly snapshot: {
    readonly version: number
    /** The snapshot's fingerprint: equal on every instance serving the same tree (whatever its BASE_URL). */
    readonly fingerprint: string
    readonly pages: number
    readonly syncedAt: number
    readonly source: 'sync' | 'storage' | 'peer'
    readonly changedPages: number
  }
  readonly purge: { readonly result: 'accepted' | 'refused'; readonly target: 'page' | 'listing' | 'endpoint' | 'unknown' }
  readonly webhook: { readonly result: 'accepted' | 'unauthorized' | 'bad-request' }
  /** A read-through miss the budget refused (it may still have been served a stored answer). */
  readonly budget: { readonly reason: 'client_share' | 'cms_budget' | 'queue_full' | 'queue_timeout' }
  /** The CMS budget moved between the cluster's (Redis) and this instance's own. */
  readonly budgetScope: { readonly scope: 'cluster' | 'local' }
  /** One per purge request to a CDN (`src/cdn/`): acknowledged, to be retried, or failed for good. */
  readonly cdnPurge: {
    readonly target: 'varnish' | 'fastly' | 'cloudflare'
    readonly outcome: 'ok' | 'retried' | 'failed'
    readonly keys: number
    /** From the swap that asked for the oldest key to this answer. */
    readonly lagMs: number
  }
  /**
   * With Redis, on the syncing instance: how a CDN purge's wait for every instance to serve its
   * snapshot ended (docs/architecture.md#purging-a-cdn-after-every-instance-serves).
   */
  readonly purgeGate: { readonly result: 'confirmed' | 'timeout' | 'unavailable' | 'standalone'; readonly waitedMs: number }
  /** With Redis: this instance's part in syncing changed. */
  readonly role: { readonly role: 'leader' | 'follower' | 'standalone' }
}

export type ShieldEvents = EventHub<ShieldEventMap>

export function createShieldEvents(): ShieldEvents {
  return createEventHub<ShieldEventMap>('cms-shield event')
}
