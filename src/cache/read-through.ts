/**
 * The read-through cache for queries the index cannot answer (search, order, fields, locale,
 * model-specific filters): tiers tried fastest first (in-process LRU, then Redis), one CMS request
 * per key at a time, and the RFC 5861 windows of `cache-policy.ts`: fresh, stale while one
 * background refresh runs, stale while the CMS fails. A good entry is never overwritten by a
 * failure. Time comes from an injected clock, so tests step through the windows without sleeping.
 * @module
 */
import { createError, isProxyError } from '../errors.js'
import type { ReadThroughBudget } from './budget/read-through-budget.js'
import { entryTimes, freshness, retentionMs, type EntryTimes, type ReadThroughPolicy } from './cache-policy.js'
import type { SharedFlight } from './shared-flight.js'
import { createSingleFlight } from './single-flight.js'
import type { CacheStore, StoredEntry } from './stores/cache-store.js'

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

export interface CachedAnswer extends StoredAnswer {
  readonly times: EntryTimes
}

export interface ReadThroughOptions {
  /** Asks the CMS; throws (a ProxyError) when it cannot give an answer worth replaying. */
  readonly load: (pathAndQuery: string) => Promise<StoredAnswer>
  /** Fastest first; an answer found in a slower tier is copied into the faster ones. */
  readonly tiers: readonly CacheStore[]
  readonly policy: ReadThroughPolicy
  /** With Redis: one CMS request per key across instances, not only in this process. */
  readonly sharedFlight?: SharedFlight
  readonly now: () => number
  readonly random: () => number
  readonly logger: { warn(details: object, message: string): void; debug(details: object, message: string): void }
  /**
   * What each CMS request this cache sends must fit in (docs/operations.md, "The CMS budget"); without
   * it every miss goes to the CMS. Readers who join a request in flight cost nothing.
   */
  readonly budget?: ReadThroughBudget
  /** Round-trip clock for the budget's latency samples (monotonic ms). */
  readonly elapsed?: () => number
}

/**
 * - `hit`: fresh entry; `miss`: asked the CMS; `coalesced`: joined a request in flight;
 * - `stale`: served past freshness while a background refresh runs;
 * - `stale-error`: served past freshness because the CMS failed;
 * - `stale-budget`: served past freshness because the CMS budget is spent.
 */
export type ReadThroughOutcome = 'hit' | 'miss' | 'coalesced' | 'stale' | 'stale-error' | 'stale-budget'

export interface GetOptions {
  /**
   * `false` for answers that must never be replayed (`order=random`): the CMS is asked every
   * time, and concurrent callers still share one request.
   */
  readonly store?: boolean
  /** The client's address, whose share of the CMS budget a miss spends. */
  readonly client?: string
}

export interface ReadThrough {
  /** Throws READ_THROUGH_CLIENT_SHARE or READ_THROUGH_OVER_BUDGET when the miss does not fit in the budget and nothing is stored. */
  get(key: string, pathAndQuery: string, options?: GetOptions): Promise<{ answer: CachedAnswer; outcome: ReadThroughOutcome }>
  /** Refreshes started in the background and not yet settled (tests wait for them). */
  settled(): Promise<void>
  /**
   * Drops `key` from this process's own tier: its entry can no longer be asked for (its pages
   * changed). The shared tier keeps it: an instance still on the older snapshot may ask.
   */
  forget(key: string): void
}

function toEntry(answer: CachedAnswer): StoredEntry {
  const meta: Record<string, string | number | boolean> = {
    status: answer.status,
    contentType: answer.contentType,
    freshUntil: answer.times.freshUntil,
    revalidateUntil: answer.times.revalidateUntil,
    errorUntil: answer.times.errorUntil,
  }
  if (answer.location !== undefined) meta['location'] = answer.location
  return { value: answer.body, storedAt: answer.storedAt, meta }
}

function fromEntry(entry: StoredEntry): CachedAnswer | undefined {
  const meta = entry.meta ?? {}
  const { status, contentType, freshUntil, revalidateUntil, errorUntil, location } = meta
  if (typeof status !== 'number' || typeof contentType !== 'string') return undefined
  if (typeof freshUntil !== 'number' || typeof revalidateUntil !== 'number' || typeof errorUntil !== 'number') return undefined
  return {
    status,
    contentType,
    ...(typeof location === 'string' ? { location } : {}),
    body: entry.value,
    storedAt: entry.storedAt,
    cacheable: true,
    times: { storedAt: entry.storedAt, freshUntil, revalidateUntil, errorUntil },
  }
}

/** The catalogue code of a failure, for filtering logs by it; `undefined` (left out) for anything else. */
function errorCode(error: unknown): string | undefined {
  return isProxyError(error) ? error.code : undefined
}

/**
 * The error for a miss the budget refused. A flood makes thousands a second, and where one was
 * raised says nothing (the reason and client do): no stack is captured for it.
 */
function refusalError(reason: string, retryAfterMs: number, client: string | undefined): Error {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    const code = reason === 'client_share' ? 'READ_THROUGH_CLIENT_SHARE' : 'READ_THROUGH_OVER_BUDGET'
    return createError(code, `read-through refused (${reason})`, { details: { reason, retryAfterMs, client } })
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** A refusal by the budget: the CMS was not asked, so it says nothing about the CMS's health. */
export function isOverBudget(error: unknown): boolean {
  return isProxyError(error, 'READ_THROUGH_CLIENT_SHARE') || isProxyError(error, 'READ_THROUGH_OVER_BUDGET')
}

/**
 * After the CMS failed a key, how long readers who may be given its stored answer (stale-if-error)
 * get it at once, while one refresh goes on in the background. Without it each of them would wait
 * for every attempt (UPSTREAM_TIMEOUT × retries: ~30 s with the defaults) to learn the CMS is down.
 */
const FAILURE_HOLD_MS = 5_000
/** Keys remembered as failing; the oldest are forgotten first (they only cost one wait more). */
const MAX_FAILING_KEYS = 10_000

export function createReadThrough(options: ReadThroughOptions): ReadThrough {
  const flights = createSingleFlight<CachedAnswer>()
  const background = new Set<Promise<unknown>>()
  /** Key → when its last refresh failed. */
  const failedAt = new Map<string, number>()

  function noteFailure(key: string): void {
    failedAt.delete(key)
    failedAt.set(key, options.now())
    if (failedAt.size > MAX_FAILING_KEYS) failedAt.delete(failedAt.keys().next().value!)
  }

  function inBackground(key: string, pathAndQuery: string, store: boolean, message: string): void {
    if (flights.has(key)) return
    // No client waits on it: it spends the CMS budget, not a client's share.
    const pending = refresh(key, pathAndQuery, store, undefined).catch((error: unknown) => {
      if (isOverBudget(error)) options.logger.debug({ code: errorCode(error), key }, 'read-through: refresh put off, the CMS budget is spent')
      else options.logger.warn({ err: error, code: errorCode(error), key }, message)
    })
    background.add(pending)
    void pending.finally(() => background.delete(pending))
  }

  async function lookup(key: string): Promise<CachedAnswer | undefined> {
    for (let i = 0; i < options.tiers.length; i++) {
      const entry = await options.tiers[i]!.get(key)
      const answer = entry && fromEntry(entry)
      if (!answer) continue
      // Promote into the faster tiers for what is left of its life.
      const keep = retentionMs(answer.times, options.now())
      for (const faster of options.tiers.slice(0, i)) void faster.set(key, toEntry(answer), keep)
      return answer
    }
    return undefined
  }

  /** Asks the CMS, within the budget: a refusal is thrown before anything is sent. */
  async function loadWithin(pathAndQuery: string, client: string | undefined): Promise<StoredAnswer> {
    const budget = options.budget
    if (!budget) return options.load(pathAndQuery)
    const admission = await budget.admit(client)
    if (!admission.ok) throw refusalError(admission.reason, admission.retryAfterMs, client)
    const elapsed = options.elapsed ?? (() => performance.now())
    const started = elapsed()
    try {
      const loaded = await options.load(pathAndQuery)
      admission.release({ rttMs: elapsed() - started, ok: true })
      return loaded
    } catch (error) {
      admission.release({ rttMs: elapsed() - started, ok: false })
      throw error
    }
  }

  async function fetchAndStore(key: string, pathAndQuery: string, store: boolean, client: string | undefined): Promise<CachedAnswer> {
    const loaded = await loadWithin(pathAndQuery, client)
    const answer: CachedAnswer = { ...loaded, times: entryTimes(loaded.storedAt, loaded.status, options.policy, options.random) }
    if (store && loaded.cacheable) {
      const keep = retentionMs(answer.times, options.now())
      await Promise.all(options.tiers.map((tier) => tier.set(key, toEntry(answer), keep)))
    }
    return answer
  }

  /** A fresh answer from any tier: what another instance has just stored, for instance. */
  async function lookupFresh(key: string): Promise<CachedAnswer | undefined> {
    for (const tier of options.tiers) {
      const entry = await tier.get(key)
      const answer = entry && fromEntry(entry)
      if (answer && freshness(answer.times, options.now()) === 'fresh') return answer
    }
    return undefined
  }

  function refresh(key: string, pathAndQuery: string, store: boolean, client: string | undefined): Promise<CachedAnswer> {
    const shared = options.sharedFlight
    return flights.run(key, async () => {
      try {
        const answer = await (shared && store
          ? shared.run(key, () => fetchAndStore(key, pathAndQuery, store, client), () => lookupFresh(key))
          : fetchAndStore(key, pathAndQuery, store, client))
        failedAt.delete(key)
        return answer
      } catch (error) {
        if (!isOverBudget(error)) noteFailure(key)
        throw error
      }
    })
  }

  return {
    async get(key, pathAndQuery, { store = true, client } = {}) {
      const cached = store ? await lookup(key) : undefined
      const state = cached ? freshness(cached.times, options.now()) : 'expired'
      if (cached && state === 'fresh') return { answer: cached, outcome: 'hit' }
      if (cached && state === 'stale-while-revalidate') {
        // RFC 5861 §3: answer now, refresh once in the background.
        inBackground(key, pathAndQuery, store, 'background refresh of a read-through entry failed')
        return { answer: cached, outcome: 'stale' }
      }
      const joining = flights.has(key)
      if (cached && state === 'stale-if-error') {
        // RFC 5861 §4 lets the stored answer stand in for a failure. While the CMS is known to be
        // failing this key (or a request for it is already out), readers get it now instead of
        // waiting for the outcome; one refresh at a time goes on behind them.
        const failed = failedAt.get(key)
        if (joining || (failed !== undefined && options.now() - failed < FAILURE_HOLD_MS)) {
          inBackground(key, pathAndQuery, store, 'read-through: the CMS failed again; still serving the stored answer')
          return { answer: cached, outcome: 'stale-error' }
        }
      }
      try {
        // A client whose own share is spent is refused before the flight and the lock in Redis a
        // granted miss needs: under a flood that is most misses (docs/performance.md, "Refusals").
        const refused = joining || client === undefined ? undefined : options.budget?.refuseSpentShare(client)
        if (refused) {
          const refusal = await refused
          if (!refusal.ok) throw refusalError(refusal.reason, refusal.retryAfterMs, client)
        }
        const answer = await refresh(key, pathAndQuery, store, client)
        return { answer, outcome: joining ? 'coalesced' : 'miss' }
      } catch (error) {
        // Over budget, any stored answer beats a refusal: the client asked for this query's answer,
        // and an old one is what a CDN would serve too (docs/operations.md, "The CMS budget").
        if (cached && isOverBudget(error)) return { answer: cached, outcome: 'stale-budget' }
        // RFC 5861 §4: within stale-if-error, the last good answer beats a failure. The reader
        // sees no error, so this line is where the operator learns why the answer is old
        // (logged once per CMS request, not by every caller that joined it).
        if (cached && state === 'stale-if-error') {
          if (!joining) options.logger.warn({ err: error, code: errorCode(error), key }, 'read-through: the CMS failed; serving the stored answer')
          return { answer: cached, outcome: 'stale-error' }
        }
        throw error
      }
    },
    async settled() {
      await Promise.allSettled([...background])
    },
    forget(key) {
      for (const tier of options.tiers) if (tier.name === 'memory') void tier.delete(key)
    },
  }
}
