/**
 * The rendered-list cache: list bodies from the snapshot, kept by what selects and renders them
 * and the digest of the pages their scope covers (`list-scope.ts`). A list whose scope did not
 * change between two snapshots keeps its body, and with it its ETag; one whose scope changed gets
 * a new key, and its old entry is dropped at once (`superseded-keys.ts`). Kept apart from the
 * list view so that the caching policy changes without touching Wagtail's listing rules.
 * @module
 */
import { LRUCache } from 'lru-cache'
import { createSupersededKeys } from '../cache/superseded-keys.js'
import { scopeDigest, type Scope } from '../tree/list-scope.js'
import type { ListQuery } from '../tree/page-selection.js'
import { listKeys } from '../tree/answer-keys.js'
import { selectPages } from '../tree/select-pages.js'
import { headerLength } from '../tree/surrogate-keys.js'
import type { Snapshot } from '../tree/snapshot.js'
import { renderList } from './render-list.js'

/** A rendered list and the surrogate keys of what it shows (`tree/answer-keys.ts`). */
export interface ListBody {
  readonly body: Buffer
  readonly keys: readonly string[]
}

export interface ListBodies {
  /** The body of `query`'s list under `snapshot`, whose pages `scope` covers, with its keys: rendered, or as cached. */
  bodyOf(snapshot: Snapshot, query: ListQuery, scope: Scope): ListBody
}

/** What selects and renders a list, bar its pages: with its scope's digest, the cache key. */
function listQueryKey(query: ListQuery): string {
  const f = query.filters
  return JSON.stringify([
    query.types === null ? null : [...query.types].sort(),
    query.specific,
    f.id ?? null, f.title ?? null, f.slug ?? null, f.seoTitle ?? null, f.searchDescription ?? null, f.showInMenus ?? null,
    query.childOf ?? null, query.ancestorOf ?? null, query.descendantOf ?? null, query.locale ?? null, query.translationOf ?? null,
    query.order === undefined ? null : `${query.order.descending ? '-' : ''}${query.order.field}`,
    query.fields?.key ?? null, query.fields?.locale ?? null,
    query.offset, query.limit,
  ])
}

function render(snapshot: Snapshot, query: ListQuery): ListBody {
  const matching = selectPages(snapshot, query)
  const { offset, limit } = query
  const items = offset >= matching.length ? [] : matching.slice(offset, offset + limit)
  // Keys are worked out with the body, once: the hit path reads both from the cache.
  return { body: renderList(matching.length, items, query.specific, query.fields), keys: listKeys(snapshot, query, items) }
}

/** @param maxBytes the cache's budget, keys counted. */
export function createListBodies(maxBytes: number): ListBodies {
  const rendered = new LRUCache<string, ListBody>({
    maxSize: maxBytes,
    sizeCalculation: (entry, key) => entry.body.length + headerLength(entry.keys) + key.length,
  })
  const digests = createSupersededKeys()
  return {
    bodyOf(snapshot, query, scope) {
      const queryKey = listQueryKey(query)
      const digest = scopeDigest(snapshot, scope)
      let body = rendered.get(`${digest}\u0000${queryKey}`)
      if (!body) {
        body = render(snapshot, query)
        rendered.set(`${digest}\u0000${queryKey}`, body)
        const dead = digests.replace(queryKey, digest)
        if (dead !== undefined) rendered.delete(`${dead}\u0000${queryKey}`)
      }
      return body
    },
  }
}
