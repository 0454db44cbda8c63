/**
 * The few events a cache store reports (cf. undici's MemoryCacheStore `maxSizeExceeded`): metrics
 * and logs subscribe here instead of being called from the store's logic. The hub is the app's one
 * event mechanism (`observability/event-hub.ts`); a listener that throws never reaches the
 * request path, whose promise is that a failing tier never throws into it.
 * @module
 */
import { createEventHub, type EventHub, type EventSource } from './event-hub.js'

export type StoreOperation = 'get' | 'set' | 'delete'

export interface StoreEventMap {
  readonly hit: { readonly key: string }
  /** `expired`: the entry was there but past the `ttlMs` it was stored with. */
  readonly miss: { readonly key: string; readonly reason: 'absent' | 'expired' | 'error' }
  /** `size`: dropped (least recently used) to stay under the store's byte bound. */
  readonly evict: { readonly key: string; readonly reason: 'size' | 'expired' }
  /** A command failed, timed out, or answered bytes that are not an entry; the caller saw a miss / no-op. */
  readonly error: { readonly operation: StoreOperation; readonly key: string; readonly error: Error; readonly timedOut: boolean }
}

export type StoreEventName = keyof StoreEventMap
export type StoreListener<E extends StoreEventName> = (event: StoreEventMap[E]) => void

/** What a store shows its users: subscribing only. */
export type StoreEvents = EventSource<StoreEventMap>

export type StoreEventHub = EventHub<StoreEventMap>

export function createStoreEvents(): StoreEventHub {
  return createEventHub<StoreEventMap>('cache store', 'CacheStoreListenerWarning')
}
