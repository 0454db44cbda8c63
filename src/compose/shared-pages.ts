/**
 * Pages that several Sites' trees hold (a Site whose root lies below another's): each tree is
 * synced on its own (the CMS answers each Site apart), but a page that comes out byte for byte the
 * same as in another tree takes that tree's texts and detail (`BuildOptions.twinOf`), so it is
 * stored once. The bytes decide, not the id: the CMS may write a shared page differently per Site
 * (docs/wagtail-compatibility.md#sites).
 * @module
 */
import type { TwinLookup } from '../tree/build-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'

export interface SharedPages {
  /** The lookup for one tree: the records of every other tree registered. */
  twinOf(own: () => Snapshot | undefined): TwinLookup
  /** A tree whose records the others may share. */
  register(current: () => Snapshot | undefined): void
}

export function createSharedPages(): SharedPages {
  const trees: Array<() => Snapshot | undefined> = []
  return {
    twinOf: (own) => (id, digest) => {
      for (const tree of trees) {
        if (tree === own) continue
        const record = tree()?.byId.get(id)
        if (record !== undefined && record.digest === digest) return record
      }
      return undefined
    },
    register: (current) => void trees.push(current),
  }
}
