/**
 * Which cache entries a new snapshot made unreachable. Rendered lists and read-through answers are
 * keyed by a digest of the pages they depend on (`list-scope.ts`), so after an edit a query gets
 * a new key, and the entry under its old key is never read again by this instance. Left alone,
 * such entries would stay until the LRU's byte budget pushed them out (the soak saw memory creep
 * towards both budgets under steady edits); this notes each query's latest digest and names the
 * one it replaced, so the caller drops it at once.
 * @module
 */

export interface SupersededKeys {
  /**
   * Notes that `query` is now answered under `digest`; returns the digest it was answered under
   * before, when that differs (its entry is dead), else `undefined`.
   */
  replace(query: string, digest: string): string | undefined
}

/** @param maxQueries queries remembered; past it the memory starts over (an old entry then ages out by LRU). */
export function createSupersededKeys(maxQueries = 10_000): SupersededKeys {
  const latest = new Map<string, string>()
  return {
    replace(query, digest) {
      const before = latest.get(query)
      if (before === digest) return undefined
      if (before === undefined && latest.size >= maxQueries) latest.clear()
      latest.set(query, digest)
      return before
    },
  }
}
