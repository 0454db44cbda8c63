/**
 * The headers of answers served from the snapshot (its "index"): the API's headers, ETag, caching
 * headers, `Cache-Status` and purge keys. An index answer is the same for every request, so its
 * header set is built once per body. Kept apart from the views, which decide what body to serve,
 * so that what an index answer says about itself changes in one place.
 * @module
 */
import type { CacheTagHeader } from '../config/schema.js'
import type { Scope } from '../tree/list-scope.js'
import type { Snapshot } from '../tree/snapshot.js'
import { responseKeys } from '../tree/surrogate-keys.js'
import { API_HEADERS, type HttpAnswer } from './answers.js'
import { cacheStatus, cachingHeaders, type ClientCachePolicy } from './cache-headers.js'
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
   * The answer for an index body. A body is only ever reused for the same scope's unchanged
   * pages, so the tags computed with its first snapshot stay right. An answer of one page's scope
   * says which page (`HttpAnswer.page`), so that it can outlive a patch that left that page alone.
   */
  answer(body: Buffer, snapshot: Snapshot, scope: Scope): HttpAnswer
  /** The purge-key headers of a 200 whose answer depends on `scope` (read-through ones too). */
  tags(snapshot: Snapshot, scope: Scope): Record<string, string> | undefined
}

export function createIndexAnswers(options: IndexAnswersOptions): IndexAnswers {
  const caching = cachingHeaders(options.clientCache)
  const status = options.cacheStatus === false ? undefined : { 'cache-status': cacheStatus.index }
  const built = new WeakMap<Buffer, HttpAnswer>()
  const tags = (snapshot: Snapshot, scope: Scope): Record<string, string> | undefined =>
    chosenTagHeaders(options.cacheTags, () => responseKeys(snapshot, scope))
  return {
    tags,
    answer(body, snapshot, scope) {
      let answer = built.get(body)
      if (!answer) {
        answer = {
          status: 200,
          headers: { ...API_HEADERS, etag: etagOf(body), ...caching, ...status, ...tags(snapshot, scope) },
          body,
          cache: 'snapshot',
          ...(scope.kind === 'page' ? { page: scope.id } : {}),
        }
        built.set(body, answer)
      }
      return answer
    },
  }
}
