/**
 * The purge-key headers a 200 carries: `Surrogate-Key`, `Cache-Tag`, both or neither, as
 * CACHE_TAG_HEADERS chooses. One place for the choice, so that answers from the snapshot and
 * read-through answers of every endpoint name their keys alike.
 * @module
 */
import type { CacheTagHeader } from '../config/schema.js'
import { tagHeaders } from '../tree/surrogate-keys.js'

/** The chosen headers for `keys`; `undefined` when none are chosen (`names` empty). */
export function chosenTagHeaders(names: readonly CacheTagHeader[], keys: () => readonly string[]): Record<string, string> | undefined {
  if (names.length === 0) return undefined
  const both = tagHeaders(keys())
  const chosen: Record<string, string> = {}
  for (const name of names) chosen[name] = both[name]
  return chosen
}
