/**
 * What the snapshot timing scripts share: a stored snapshot file read with the origin it was made
 * for (so nothing is refused or rebased), and a one-page edit made the way a refresh makes it.
 * @module
 */
import { readFileSync } from 'node:fs'
import { readSnapshotMetadata, type SnapshotOrigin, type StoredMetadata } from '../../src/persist/snapshot-codec.js'
import { carryOver, patchSnapshot } from '../../src/tree/build-snapshot.js'
import type { Snapshot } from '../../src/tree/snapshot.js'

export interface StoredFile {
  readonly stored: Buffer
  readonly metadata: StoredMetadata
  readonly origin: SnapshotOrigin
}

/** A file written by SNAPSHOT_FILE (or a Redis snapshot key's value); throws when it is not one. */
export function readStoredFile(path: string): StoredFile {
  const stored = readFileSync(path)
  const read = readSnapshotMetadata(stored)
  if (!read.ok) throw new Error(read.reason)
  const { metadata } = read
  return { stored, metadata, origin: { upstreamUrl: metadata.upstreamUrl, baseUrl: metadata.baseUrl } }
}

/** `snapshot` with the page at the middle of the tree order retitled, everywhere its title shows (in place, as a refresh does). */
export function retitled(snapshot: Snapshot): Snapshot {
  const record = snapshot.pages.at(Math.floor(snapshot.pages.length / 2))!
  const title = `${record.title} (edited)`
  const swap = (text: string) => text.replaceAll(JSON.stringify(record.title), JSON.stringify(title))
  const { digest: _digest, from: _from, ...page } = carryOver(record)
  const edited = { ...page, title, listItem: swap(record.listItem), detail: swap(record.detail.toString('utf8')) }
  return patchSnapshot(snapshot, new Map([[record.id, edited]]), { version: snapshot.version + 1, syncedAt: snapshot.syncedAt + 1, fullSyncedAt: snapshot.fullSyncedAt, dialect: snapshot.dialect })
}
