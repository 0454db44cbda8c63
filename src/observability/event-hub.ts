/**
 * The one event mechanism of cms-shield: a small typed hub. The core (sync, CMS client, caches,
 * routes) reports what happened through hubs like this one; metrics and logs subscribe. Each
 * hub has its own vocabulary: `shield-events.ts` for the app, `store-events.ts` for
 * a cache tier.
 *
 * Why not `node:diagnostics_channel`, which undici and Fastify use: its named channels are
 * process-global, and several apps live in one process (every test file builds a few), so one
 * instance's metrics would count another's events. Names made per instance would isolate them,
 * but then no outside tool could know the names, which is the point of named channels; and a
 * subscriber that throws there becomes an uncaught exception, while nothing a listener does may
 * throw into a request or a sync. What the channel offers hot paths, `hasSubscribers`, is
 * `listens()` here.
 *
 * Not node:events either: an EventEmitter throws when `'error'` has no listener. A listener that
 * throws is reported as a process warning.
 * @module
 */

export interface EventSource<M> {
  /** Subscribes; returns the function that unsubscribes. */
  on<E extends keyof M>(event: E, listener: (payload: M[E]) => void): () => void
}

export interface EventHub<M> extends EventSource<M> {
  emit<E extends keyof M>(event: E, payload: M[E]): void
  /** Lets hot paths skip building a payload nobody listens to. */
  listens(event: keyof M): boolean
}

/** `name` and `warningType` say, in the warning a throwing listener causes, whose listener it was. */
export function createEventHub<M>(name: string, warningType = 'EventListenerWarning'): EventHub<M> {
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
          process.emitWarning(`${name} '${String(event)}' listener threw: ${String(error)}`, warningType)
        }
      }
    },
    listens: (event) => (listeners.get(event)?.size ?? 0) > 0,
  }
}
