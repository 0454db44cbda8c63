/**
 * The one contract both cache tiers implement, after undici's CacheStore: the in-process LRU (`memory`) and the shared Redis tier
 * (`redis`) are interchangeable behind it, so the tiered cache, fakes and a future store are
 * drop-in.
 *
 * A store keeps bytes and says nothing about freshness: `ttlMs` is only how long the tier may
 * keep an entry (stale windows included); whether an entry is fresh, stale or unusable is the
 * caller's decision, from `storedAt` and `meta`.
 * @module
 */
import type { StoreEvents } from '../../observability/store-events.js'

export type { StoreEventMap, StoreEventName, StoreEvents, StoreListener, StoreOperation } from '../../observability/store-events.js'

export type EntryMeta = Readonly<Record<string, string | number | boolean>>

export interface StoredEntry {
  /** The bytes as they will be replayed. */
  readonly value: Buffer
  /** When the entry was produced (clock ms), kept by every tier so freshness survives a hop through Redis. */
  readonly storedAt: number
  /** Small facts the caller needs to replay or judge the entry (status, content type, ETag…). */
  readonly meta?: EntryMeta
}

export interface CacheStore extends StoreEvents {
  /** `'memory'` or `'redis'`: the label metrics and `Cache-Status` use. */
  readonly name: string
  /** Never rejects: a tier that fails answers `undefined`, as if it had nothing. */
  get(key: string): Promise<StoredEntry | undefined>
  /**
   * Never rejects: a tier that fails drops the write. `ttlMs` is how long the tier may keep the
   * entry, stale windows included; `ttlMs <= 0` stores nothing (and removes an older entry).
   */
  set(key: string, entry: StoredEntry, ttlMs: number): Promise<void>
  /** Never rejects. */
  delete(key: string): Promise<void>
}
