/**
 * A small typed event hub. The core (sync, CMS client, caches, routes) reports what happened
 * through hubs like this one; metrics and logs subscribe: observability is fed by events
 * from the core, not by calls sprinkled through it.
 *
 * Not node:events: an EventEmitter throws when `'error'` has no listener, and nothing a listener
 * does may throw into a request or a sync. A listener that throws is reported as a process warning.
 * @module
 */

export interface EventHub<M> {
  /** Subscribes; returns the function that unsubscribes. */
  on<E extends keyof M>(event: E, listener: (payload: M[E]) => void): () => void
  emit<E extends keyof M>(event: E, payload: M[E]): void
  /** Lets hot paths skip building a payload nobody listens to. */
  listens(event: keyof M): boolean
}

export function createEventHub<M>(name: string): EventHub<M> {
  const listeners = new Map<keyof M, Set<(payload: never) => void>>()
  return {
    on(event, listener) {
      let set = listeners.get(event)
      if (!set) listeners.set(event, (set = new Set()))
      set.add(listener as (payload: never) => void)
      return () => void set.delete(listener as (payload: never) => void)
    },
    emit<E extends keyof M>(event: E, payload: M[E]) {
      const set = listeners.get(event)
      if (!set) return
      for (const listener of set) {
        try {
          ;(listener as (value: M[E]) => void)(payload)
        } catch (error) {
          process.emitWarning(`${name} '${String(event)}' listener threw: ${String(error)}`, 'EventListenerWarning')
        }
      }
    },
    listens: (event) => (listeners.get(event)?.size ?? 0) > 0,
  }
}
