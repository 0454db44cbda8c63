/**
 * A read-only map that is another map with some values replaced: the lookups of a snapshot that
 * was patched in place (`patchSnapshot`). A new id map per edit costs CPU and an entry of garbage
 * per page for a change of one or two values (and the slowest answers suffer during swaps,
 * docs/performance.md, "What a swap costs readers"); layering the changes over the previous
 * snapshot's map costs what changed.
 *
 * The layers never nest: patching a patched map merges the changes into one overlay over the same
 * base, and once the overlay outgrows `maxOverlay` the next patch writes one flat map again, so a
 * lookup is at most two `Map` reads however many patches came before.
 * @module
 */
import type { Steps } from './slices.js'
import { SLICE } from './slices.js'

/** What a snapshot's maps offer its readers: reads by key, never iteration or writes. */
export interface Lookup<K, V> {
  get(key: K): V | undefined
  has(key: K): boolean
  readonly size: number
}

/** `base` with the values of `overlay` in place of its own; the keys are `base`'s. Values are never `undefined`. */
export class PatchedMap<K, V> implements Lookup<K, V> {
  constructor(
    readonly base: ReadonlyMap<K, V>,
    readonly overlay: ReadonlyMap<K, V>,
  ) {}

  get(key: K): V | undefined {
    const value = this.overlay.get(key)
    return value === undefined ? this.base.get(key) : value
  }

  has(key: K): boolean {
    return this.base.has(key)
  }

  get size(): number {
    return this.base.size
  }

  /** Every entry in `base`'s order, with its current value. */
  *[Symbol.iterator](): Generator<[K, V]> {
    for (const [key, value] of this.base) yield [key, this.overlay.get(key) ?? value]
  }
}

/** Overlay entries past which a patch writes a flat map again: a lookup then stops paying for the layer. */
export const MAX_OVERLAY = 4_096

/**
 * `map` with `changes` (keys it already has) given new values. Small changes make a
 * {@link PatchedMap} over the same base; past `maxOverlay` a flat copy is written, a slice of
 * entries between yields.
 */
export function* patchMap<K, V>(map: Lookup<K, V>, changes: ReadonlyMap<K, V>, maxOverlay = MAX_OVERLAY): Steps<Lookup<K, V>> {
  if (!(map instanceof PatchedMap) && !(map instanceof Map)) throw new TypeError('patchMap: only a Map or a PatchedMap can be patched')
  const base: ReadonlyMap<K, V> = map instanceof PatchedMap ? map.base : map
  const overlay = new Map(map instanceof PatchedMap ? map.overlay : undefined)
  for (const [key, value] of changes) {
    if (!base.has(key)) throw new TypeError(`patchMap: key ${String(key)} is not in the map; a patch replaces values, it never adds keys`)
    overlay.set(key, value)
  }
  if (overlay.size <= maxOverlay) return new PatchedMap(base, overlay)
  const flat = new Map<K, V>()
  let count = 0
  for (const [key, value] of base) {
    flat.set(key, overlay.get(key) ?? value)
    if (++count % SLICE === 0) yield
  }
  return flat
}
