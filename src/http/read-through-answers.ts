/**
 * How a read-through entry becomes an answer, for every view that forwards to the CMS (the pages
 * views and the router's other endpoints): its `Cache-Status`, `Age`, ETag, caching headers and
 * purge keys, and the refusals a miss gets when the CMS budget says no (README, "Protecting the
 * CMS"). Pure of Fastify.
 * @module
 */
import type { ProxyError } from '../errors.js'
import type { CachedAnswer, ReadThroughOutcome } from '../cache/read-through.js'
import type { CacheOutcome } from '../observability/shield-events.js'
import { API_HEADERS, proxyFailureAnswer, redirectAnswer, type HttpAnswer } from './answers.js'
import { cacheStatus, cachingHeaders, negativeCachingHeaders, type ClientCachePolicy } from './cache-headers.js'
import { etagOf } from './validators.js'

export interface ReadThroughAnswersOptions {
  readonly clientCache: ClientCachePolicy
  /** Send `Cache-Status` (CACHE_STATUS_HEADER); default true. */
  readonly cacheStatus?: boolean
  readonly now: () => number
}

export interface ReadThroughAnswers {
  /**
   * The answer for a read-through entry, as this request gets it. Readers of one entry within the
   * same second (the waiters of one CMS request, or hits on a hot key) under the same `generation`
   * get one and the same answer object, so its headers and tags are built once, and the fast
   * path's header list for it is too.
   * @param generation what the tags were computed under (the snapshot); a new one builds anew.
   * @param tags the purge-key headers of a 200 or 404, asked for only when one is built.
   */
  answerOf(stored: CachedAnswer, outcome: ReadThroughOutcome, generation: object, tags: () => Record<string, string> | undefined): HttpAnswer
  /**
   * A miss the budget refused, with nothing stored to serve instead: 429 when this client's own
   * share is spent, 503 when the CMS budget is. A reader who joined another client's refused
   * request was not refused for its own share: a 503 for it.
   */
  refused(error: ProxyError, client: string | undefined): HttpAnswer
  /** Upstream failure without a stored answer: 504 for a timeout, else 502. */
  failed(error: ProxyError | undefined): HttpAnswer
}

/** Refusal answers kept per status (by Retry-After); past it the memory starts over. */
const MAX_REFUSAL_ANSWERS = 64

const TIMED_OUT = proxyFailureAnswer(504, 'the CMS did not answer in time')
const FAILED = proxyFailureAnswer(502, 'the CMS could not answer this query')

interface LastAnswer {
  readonly generation: object
  readonly storedAt: number
  readonly cacheStatus: string
  readonly age: string
  readonly answer: HttpAnswer
}

export function createReadThroughAnswers(options: ReadThroughAnswersOptions): ReadThroughAnswers {
  const caching = cachingHeaders(options.clientCache)
  const negative = negativeCachingHeaders(options.clientCache)
  // Built once: a spread of it adds `cache-status` or nothing.
  const withStatus = options.cacheStatus === false ? () => undefined : (status: string) => ({ 'cache-status': status })
  // The last answer built for each read-through body.
  const last = new WeakMap<Buffer, LastAnswer>()

  function statusOf(outcome: ReadThroughOutcome, stored: CachedAnswer): string {
    const past = (options.now() - stored.times.freshUntil) / 1000
    switch (outcome) {
      case 'hit': return cacheStatus.hit
      case 'coalesced': return cacheStatus.collapsed
      case 'stale': return cacheStatus.stale(past, 'revalidating')
      case 'stale-error': return cacheStatus.stale(past, 'cms-error')
      case 'stale-budget': return cacheStatus.stale(past, 'over-budget')
      case 'miss': return cacheStatus.miss(stored.cacheable)
    }
  }

  function build(stored: CachedAnswer, outcome: ReadThroughOutcome, status: string, age: string, tags: () => Record<string, string> | undefined): HttpAnswer {
    // The outcomes are the metric's cache labels, named alike.
    const cache: CacheOutcome = outcome
    if (stored.status === 302 && stored.location !== undefined) {
      const redirect = redirectAnswer(stored.location)
      return { ...redirect, headers: { ...redirect.headers, ...withStatus(status), age }, cache }
    }
    const headers: Record<string, string> = { ...API_HEADERS, ...withStatus(status), age }
    if (stored.status === 200) {
      headers['etag'] = etagOf(stored.body)
      Object.assign(headers, caching)
      Object.assign(headers, tags())
    } else if (stored.status === 404) {
      // What the CMS says does not exist: kept in front for the negative TTL, and purged by any change.
      Object.assign(headers, negative)
      Object.assign(headers, tags())
    }
    return { status: stored.status, headers, body: stored.body, cache }
  }

  // Refusals by status and Retry-After, each built once: a flood gets a great many, all
  // alike, and one answer object lets the writers reuse its header list too (docs/performance.md,
  // "Refusals"). Retry-After values are few (the buckets' refill times), but bounded all the same.
  const refusals = { 429: new Map<number, HttpAnswer>(), 503: new Map<number, HttpAnswer>() }
  function refusal(status: 429 | 503, seconds: number): HttpAnswer {
    const byRetry = refusals[status]
    let answer = byRetry.get(seconds)
    if (!answer) {
      if (byRetry.size >= MAX_REFUSAL_ANSWERS) byRetry.clear()
      answer = status === 429
        ? proxyFailureAnswer(429, 'too many requests that only the CMS can answer; slow down', seconds)
        : proxyFailureAnswer(503, 'the CMS is busy; try again later', seconds)
      byRetry.set(seconds, answer)
    }
    return answer
  }

  return {
    answerOf(stored, outcome, generation, tags) {
      const status = statusOf(outcome, stored)
      const age = String(Math.max(0, Math.floor((options.now() - stored.storedAt) / 1000)))
      const previous = last.get(stored.body)
      if (previous && previous.generation === generation && previous.storedAt === stored.storedAt && previous.cacheStatus === status && previous.age === age) {
        return previous.answer
      }
      const answer = build(stored, outcome, status, age, tags)
      last.set(stored.body, { generation, storedAt: stored.storedAt, cacheStatus: status, age, answer })
      return answer
    },
    refused(error, client) {
      const details = error.details as { retryAfterMs?: number; client?: string } | undefined
      const seconds = Math.max(1, Math.ceil((details?.retryAfterMs ?? 1000) / 1000))
      return refusal(error.code === 'READ_THROUGH_CLIENT_SHARE' && details?.client === client ? 429 : 503, seconds)
    },
    failed: (error) => (error?.statusCode === 504 ? TIMED_OUT : FAILED),
  }
}
