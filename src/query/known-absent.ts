/**
 * What the CMS said does not exist, remembered while the snapshot it was said under is current:
 * `type` names no installed page model has, and `find/` paths that gave no page. The planners
 * consult it, so a client varying the rest of its query does not cost a CMS request each time.
 *
 * Clients choose the names, so each kind is bounded: past `maxEntries` the oldest is forgotten
 * (forgetting costs one CMS request more, never a wrong answer).
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'

export interface KnownAbsent {
  /** A `type` name, keyed as `typeKey` does, that the CMS answered "type doesn't exist" for. */
  hasType(key: string): boolean
  addType(key: string): void
  /** A `find/` scope (`findPathKey`) whose `html_path` gave no page in its queryset. */
  hasFindPath(key: string): boolean
  addFindPath(key: string): void
}

/** Knows nothing and learns nothing: for planners called without a memory. */
export const NOTHING_KNOWN_ABSENT: KnownAbsent = {
  hasType: () => false,
  addType: () => undefined,
  hasFindPath: () => false,
  addFindPath: () => undefined,
}

/** A set that forgets its oldest member past `max`; re-adding a member makes it the newest. */
function boundedSet(max: number): { has(key: string): boolean; add(key: string): void } {
  const members = new Set<string>()
  return {
    has: (key) => members.has(key),
    add(key) {
      members.delete(key)
      members.add(key)
      if (members.size > max) members.delete(members.values().next().value!)
    },
  }
}

export function createKnownAbsent(maxEntries: number): KnownAbsent {
  const types = boundedSet(maxEntries)
  const paths = boundedSet(maxEntries)
  return {
    hasType: (key) => types.has(key),
    addType: (key) => types.add(key),
    hasFindPath: (key) => paths.has(key),
    addFindPath: (key) => paths.add(key),
  }
}

/**
 * One {@link KnownAbsent} per snapshot: asked with a different snapshot than last time, it starts
 * empty. A fact holds for the CMS the snapshot was read from; a sync that saw a change (or a full
 * sync) swaps a new snapshot in and with it a new memory.
 */
export function createKnownAbsentPerSnapshot(maxEntries: number): (snapshot: Snapshot) => KnownAbsent {
  let current: Snapshot | undefined
  let known = createKnownAbsent(maxEntries)
  return (snapshot) => {
    if (snapshot !== current) {
      current = snapshot
      known = createKnownAbsent(maxEntries)
    }
    return known
  }
}

/**
 * Django's `apps.get_model` key for one `type` name: the app label exact, the model name
 * case-insensitive. `undefined` unless the name is exactly `app.Model` (a 400 in any case).
 */
export function typeKey(name: string): string | undefined {
  const parts = name.split('.')
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') return undefined
  return `${parts[0]}.${parts[1]!.toLowerCase()}`
}

/**
 * The key of a `find/` lookup by `html_path`: the path as Wagtail routes it (empty components
 * dropped) and the `type` and `site` values, which choose the queryset the page must be in.
 * Type names are keyed as `typeKey` does, sorted: the queryset does not depend on their order.
 */
export function findPathKey(htmlPath: string, type: string | undefined, site: string | undefined): string {
  const path = htmlPath.split('/').filter((part) => part !== '').join('/')
  const types = type === undefined ? null : [...new Set(type.split(',').map((name) => typeKey(name) ?? name))].sort().join(',')
  return JSON.stringify([path, types, site ?? null])
}
