/**
 * The in-process tier: an LRU bounded in bytes (lru-cache), one per process.
 *
 * Expiry is checked against the injected clock on every `get`, not left to lru-cache's TTL,
 * which reads `performance.now()` itself: tests then step through TTLs without sleeping, and
 * both tiers agree on what "now" is. Expired entries are not swept; they are dropped when read
 * or when the byte bound pushes them out, like any other least recently used entry.
 * @module
 */
import { LRUCache } from 'lru-cache'
import type { CacheStore, EntryMeta, StoredEntry } from './cache-store.js'
import { createStoreEvents } from '../../observability/store-events.js'

export interface MemoryStoreOptions {
  /** Bound on keys, values and per-entry overhead together (`CACHE_MAX_BYTES`). */
  readonly maxBytes: number
  readonly now: () => number
}

export interface MemoryStore extends CacheStore {
  readonly name: 'memory'
  /** Entries held, expired ones not yet dropped included. */
  readonly entries: number
  /** Bytes counted against `maxBytes`. */
  readonly bytes: number
}

/** Bookkeeping per entry (the object, the map slot, the LRU links), so tiny values still cost something. */
const ENTRY_OVERHEAD_BYTES = 256

interface Slot {
  readonly entry: StoredEntry
  readonly expiresAt: number
}

export function createMemoryStore(options: MemoryStoreOptions): MemoryStore {
  if (!Number.isSafeInteger(options.maxBytes) || options.maxBytes < 1) {
    throw new TypeError(`expected maxBytes to be a positive integer, got ${String(options.maxBytes)}`)
  }
  const events = createStoreEvents()
  const cache = new LRUCache<string, Slot>({
    maxSize: options.maxBytes,
    sizeCalculation: (slot, key) => entrySize(key, slot.entry),
    dispose: (_slot, key, reason) => {
      if (reason === 'evict') events.emit('evict', { key, reason: 'size' })
    },
  })

  return {
    name: 'memory',
    on: events.on,
    async get(key) {
      const slot = cache.get(key)
      if (!slot) {
        events.emit('miss', { key, reason: 'absent' })
        return undefined
      }
      if (options.now() >= slot.expiresAt) {
        cache.delete(key)
        events.emit('evict', { key, reason: 'expired' })
        events.emit('miss', { key, reason: 'expired' })
        return undefined
      }
      events.emit('hit', { key })
      return slot.entry
    },
    async set(key, entry, ttlMs) {
      // An entry larger than the whole bound is not stored; lru-cache then drops the older entry
      // under the key too, which is right: it is superseded either way.
      if (ttlMs > 0) cache.set(key, { entry, expiresAt: options.now() + ttlMs })
      else cache.delete(key)
    },
    async delete(key) {
      cache.delete(key)
    },
    get entries() {
      return cache.size
    },
    get bytes() {
      return cache.calculatedSize
    },
  }
}

function entrySize(key: string, entry: StoredEntry): number {
  return entry.value.length + key.length + metaSize(entry.meta) + ENTRY_OVERHEAD_BYTES
}

function metaSize(meta: EntryMeta | undefined): number {
  if (!meta) return 0
  let size = 0
  for (const [name, value] of Object.entries(meta)) size += name.length + (typeof value === 'string' ? value.length : 8)
  return size
}
