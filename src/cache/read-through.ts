/**
 * The read-through cache for queries the index cannot answer (search, order, fields, locale,
 * model-specific filters): one CMS request per key at a time, kept for `CACHE_TTL` in a
 * byte-bounded LRU. Time comes from an injected clock so tests step through TTLs without sleeping.
 * @module
 */
import { LRUCache } from 'lru-cache'
import { createSingleFlight } from './single-flight.js'

/** A CMS answer as the proxy replays it: already rewritten, ready to send. */
export interface StoredAnswer {
  readonly status: number
  readonly contentType: string
  /** find's 302 target, already pointing at BASE_URL. */
  readonly location?: string
  readonly body: Buffer
  /** When the CMS answered (clock ms). */
  readonly storedAt: number
  /** False for answers that must not be replayed to anyone else (e.g. they carried Set-Cookie). */
  readonly cacheable: boolean
}

export interface ReadThroughOptions {
  /** Asks the CMS; throws (a ProxyError) when it cannot give an answer worth replaying. */
  readonly load: (pathAndQuery: string) => Promise<StoredAnswer>
  readonly ttlMs: number
  readonly maxBytes: number
  readonly now: () => number
}

export type ReadThroughOutcome = 'hit' | 'miss' | 'coalesced'

export interface ReadThrough {
  /**
   * @param options.store `false` for answers that must never be replayed (`order=random`): the
   * CMS is asked every time, and concurrent callers still share one request.
   */
  get(key: string, pathAndQuery: string, options?: { store?: boolean }): Promise<{ answer: StoredAnswer; outcome: ReadThroughOutcome }>
  /** Drops every entry: the snapshot changed, so search and ordering results may have too. */
  clear(): void
  readonly entries: number
  readonly bytes: number
}

export function createReadThrough(options: ReadThroughOptions): ReadThrough {
  const cache = new LRUCache<string, StoredAnswer>({
    maxSize: options.maxBytes,
    sizeCalculation: (answer, key) => Math.max(1, answer.body.length + key.length + 256),
  })
  const flights = createSingleFlight<StoredAnswer>()

  return {
    async get(key, pathAndQuery, { store = true } = {}) {
      const cached = store ? cache.get(key) : undefined
      if (cached && options.now() - cached.storedAt < options.ttlMs) return { answer: cached, outcome: 'hit' }
      const joining = flights.has(key)
      const answer = await flights.run(key, async () => {
        const loaded = await options.load(pathAndQuery)
        if (store && loaded.cacheable && options.ttlMs > 0) cache.set(key, loaded)
        else cache.delete(key)
        return loaded
      })
      return { answer, outcome: joining ? 'coalesced' : 'miss' }
    },
    clear: () => cache.clear(),
    get entries() {
      return cache.size
    },
    get bytes() {
      return cache.calculatedSize
    },
  }

}
