/**
 * The headers of answers served from the snapshot (its "index"): the API's headers, ETag, caching
 * headers, `Cache-Status` and purge keys. An index answer is the same for every request, so its
 * header set is built once per body. Kept apart from the views, which decide what body to serve,
 * so that what an index answer says about itself changes in one place.
 * @module
 */
import type { CacheTagHeader } from '../config/schema.js'
import type { WagtailError } from '../query/wagtail-messages.js'
import { READ_THROUGH_KEYS } from '../tree/answer-keys.js'
import { API_HEADERS, errorAnswer, redirectAnswer, type HttpAnswer } from './answers.js'
import { cacheStatus, cachingHeaders, negativeCachingHeaders, type ClientCachePolicy } from './cache-headers.js'
import { chosenTagHeaders } from './purge-tags.js'
import { etagOf } from './validators.js'

export interface IndexAnswersOptions {
  readonly clientCache: ClientCachePolicy
  /** Which of `Surrogate-Key` and `Cache-Tag` 200s carry (CACHE_TAG_HEADERS); none when empty. */
  readonly cacheTags: readonly CacheTagHeader[]
  /** Send `Cache-Status` (CACHE_STATUS_HEADER); default true. */
  readonly cacheStatus?: boolean
}

export interface IndexAnswers {
  /**
   * The answer for an index body, whose keys (`tree/answer-keys.ts`) `keys` gives. A body is only
   * ever reused for the same inputs, so the keys computed with its first snapshot stay right. An
   * answer of one page's detail says which page (`HttpAnswer.page`), so that it can outlive a
   * patch that left that page alone.
   */
  answer(body: Buffer, keys: () => readonly string[], page?: number): HttpAnswer
  /** A 404 for an id or path that names nothing: kept for the negative TTL, with the keys its creation purges. */
  absent(error: WagtailError, keys: readonly string[]): HttpAnswer
  /** `find/`'s redirect, cacheable like a 200, with the keys of the page it found. */
  redirect(location: string, keys: readonly string[]): HttpAnswer
  /** The purge-key headers of a read-through 200 or 404 (`cms-read`: purged by any change). */
  readThroughTags(): Record<string, string> | undefined
}

export function createIndexAnswers(options: IndexAnswersOptions): IndexAnswers {
  const caching = cachingHeaders(options.clientCache)
  const negative = negativeCachingHeaders(options.clientCache)
  const status = options.cacheStatus === false ? undefined : { 'cache-status': cacheStatus.index }
  const built = new WeakMap<Buffer, HttpAnswer>()
  const tagsOf = (keys: () => readonly string[]) => chosenTagHeaders(options.cacheTags, keys)
  const readThroughTags = tagsOf(() => READ_THROUGH_KEYS)
  return {
    readThroughTags: () => readThroughTags,
    answer(body, keys, page) {
      let answer = built.get(body)
      if (!answer) {
        answer = {
          status: 200,
          headers: { ...API_HEADERS, etag: etagOf(body), ...caching, ...status, ...tagsOf(keys) },
          body,
          cache: 'snapshot',
          ...(page === undefined ? {} : { page }),
        }
        built.set(body, answer)
      }
      return answer
    },
    absent(error, keys) {
      const plain = errorAnswer(error)
      return { ...plain, headers: { ...plain.headers, ...negative, ...status, ...tagsOf(() => keys) } }
    },
    redirect(location, keys) {
      const plain = redirectAnswer(location)
      return { ...plain, headers: { ...plain.headers, ...caching, ...status, ...tagsOf(() => keys) } }
    },
  }
}
