/**
 * The few events a cache store reports (cf. undici's MemoryCacheStore `maxSizeExceeded`): metrics
 * and logs subscribe here instead of being called from the store's logic.
 *
 * Not node:events: an EventEmitter throws when `'error'` has no listener, and a store's promise is
 * that a failing tier never throws into the request path. A listener that throws is reported as a
 * process warning for the same reason.
 * @module
 */

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

export interface StoreEvents {
  /** Subscribes; returns the function that unsubscribes. */
  on<E extends StoreEventName>(event: E, listener: StoreListener<E>): () => void
}

export interface StoreEventHub extends StoreEvents {
  emit<E extends StoreEventName>(event: E, payload: StoreEventMap[E]): void
  /** Lets hot paths skip building a payload nobody listens to. */
  listens(event: StoreEventName): boolean
}

export function createStoreEvents(): StoreEventHub {
  const listeners = new Map<StoreEventName, Set<(payload: never) => void>>()
  return {
    on(event, listener) {
      let set = listeners.get(event)
      if (!set) listeners.set(event, (set = new Set()))
      set.add(listener)
      return () => void set.delete(listener)
    },
    emit(event, payload) {
      const set = listeners.get(event)
      if (!set) return
      for (const listener of set) {
        try {
          ;(listener as StoreListener<typeof event>)(payload)
        } catch (error) {
          process.emitWarning(`cache store '${event}' listener threw: ${String(error)}`, 'CacheStoreListenerWarning')
        }
      }
    },
    listens: (event) => (listeners.get(event)?.size ?? 0) > 0,
  }
}
