/**
 * The stored form of a snapshot (a file, a Redis key): versioned, checksummed, compressed; and
 * loading one: decode, check it was made for this configuration, rebuild. In parts:
 *
 * - `snapshot-framing.ts`: the header (magic, format version, compression, lengths, checksum)
 *   around every format, and the part and group tables;
 * - `snapshot-metadata.ts`: the metadata JSON (origin, version, fingerprint, dialect);
 * - `snapshot-compression.ts`: each part compressed on its own (none, gzip, brotli);
 * - `snapshot-reader.ts`: the format this build writes (4), read; `snapshot-encoder.ts` writes it;
 * - `snapshot-legacy-readers.ts`: formats 3 and 2, still read. Kept, not dropped: both were
 *   written by builds that landed, and a snapshot they stored in Redis or SNAPSHOT_FILE outlives
 *   a deploy, so a new instance must still start warm from it (docs/operations.md, "The snapshot
 *   file"); they cost no writer, and format 2's page lines are the lines patches still carry.
 *
 * Decoding never throws: anything malformed, truncated, of another format version or failing its
 * checksum is refused with a reason. {@link loadSnapshot} refuses a snapshot synced from another
 * CMS, and points one made for another BASE_URL at this instance's.
 *
 * This module is also where the rest of the app imports the codec from.
 * @module
 */
import { bytesOf } from '../tree/detail-body.js'
import { buildSnapshot, carryOver, TreeInconsistentError, type SyncedPage } from '../tree/build-snapshot.js'
import type { PageRecord, Snapshot } from '../tree/snapshot.js'
import { describe, refuse, type Refusal } from './refusal.js'
import { rebasePages, sameBaseUrl } from './rebase-snapshot.js'
import { readFrame, type CheckedSnapshot, type Frame } from './snapshot-framing.js'
import { decodeLines, WHOLE_LAYOUT } from './snapshot-legacy-readers.js'
import type { SnapshotMetadata, SnapshotOrigin } from './snapshot-metadata.js'
import { decodeParts, decodePartsAsync, GROUPED_LAYOUT, type DecodedSnapshot, type DecodeResult, type PartsLayout } from './snapshot-reader.js'

export { pageLine, readPage } from './page-lines.js'
export type { Refusal } from './refusal.js'
export { compressPart, type EncodeOptions, type SnapshotCompression } from './snapshot-compression.js'
export { frame, FRAME_HEADER_BYTES, readSnapshotMetadata, type CheckedSnapshot, type MetadataResult } from './snapshot-framing.js'
export { isCount, metadataFields, metadataOf, readMetadata, type SnapshotMetadata, type SnapshotOrigin, type StoredMetadata } from './snapshot-metadata.js'
export type { DecodedSnapshot, DecodeResult } from './snapshot-reader.js'

export type LoadResult = { readonly ok: true; readonly snapshot: Snapshot; readonly decoded: DecodedSnapshot } | Refusal

/** Format 4 has a group table; format 3 none. */
function layoutOf(frame: Frame): PartsLayout {
  return frame.groups !== undefined ? GROUPED_LAYOUT : WHOLE_LAYOUT
}

/** The decoded snapshot, or the reason a buffer was refused. Never throws. */
export function tryDecodeSnapshot(stored: Buffer | CheckedSnapshot): DecodeResult {
  try {
    const result = Buffer.isBuffer(stored) ? readFrame(stored) : { ok: true as const, frame: stored.checked }
    if (!result.ok) return result
    const { frame } = result
    return frame.parts ? decodeParts(frame, frame.parts, layoutOf(frame)) : decodeLines(frame)
  } catch (caught) {
    return refuse(`malformed snapshot: ${describe(caught)}`)
  }
}

/**
 * {@link tryDecodeSnapshot} with the parts that are not details decompressed on libuv's thread
 * pool, several at once, so that a follower loading a whole snapshot keeps answering meanwhile.
 * Never rejects.
 */
export async function tryDecodeSnapshotAsync(buf: Buffer): Promise<DecodeResult> {
  try {
    const result = readFrame(buf)
    if (!result.ok) return result
    const { frame } = result
    return frame.parts ? await decodePartsAsync(frame, frame.parts, layoutOf(frame)) : decodeLines(frame)
  } catch (caught) {
    return refuse(`malformed snapshot: ${describe(caught)}`)
  }
}

/**
 * One page as {@link buildSnapshot} took it: building them again gives the same fingerprint and
 * the same bytes per page. (The detail is kept as UTF-8 bytes, and the fingerprint hashes the
 * detail's UTF-8 bytes, so decoding them loses nothing that counts.)
 */
export function syncedPageOf(record: PageRecord): SyncedPage {
  const { digest: _digest, from: _from, ...page } = carryOver(record)
  return { ...page, detail: bytesOf(record.detail).toString('utf8') }
}

/**
 * Why a decoded snapshot must not be served under this configuration, or `undefined` when it may.
 * Another BASE_URL is no reason: {@link rebaseDecoded} points its `detail_url`s at this one.
 */
export function originMismatch(decoded: SnapshotMetadata, expected: SnapshotOrigin): string | undefined {
  if (!sameBaseUrl(decoded.upstreamUrl, expected.upstreamUrl)) {
    return `snapshot was synced from UPSTREAM_URL ${decoded.upstreamUrl}, not ${expected.upstreamUrl}`
  }
  return undefined
}

/** The decoded snapshot with its bodies' `detail_url`s on `baseUrl` (itself when they already are). */
export function rebaseDecoded(decoded: DecodedSnapshot, baseUrl: string): DecodedSnapshot {
  if (sameBaseUrl(decoded.baseUrl, baseUrl)) return decoded
  return { ...decoded, baseUrl, pages: rebasePages(decoded.pages, decoded.baseUrl, baseUrl) }
}

/** Rebuilds the snapshot with {@link buildSnapshot}; refused unless its fingerprint is the stored one. */
export function rebuildFromDecoded(decoded: DecodedSnapshot): LoadResult {
  let snapshot: Snapshot
  try {
    snapshot = buildSnapshot(decoded.pages, {
      version: decoded.version,
      syncedAt: decoded.syncedAt,
      fullSyncedAt: decoded.fullSyncedAt ?? 0,
      dialect: decoded.dialect,
      ...(decoded.translations === undefined ? {} : { translations: decoded.translations }),
    })
  } catch (caught) {
    if (caught instanceof TreeInconsistentError) return { ok: false, reason: `stored ${caught.message}` }
    return { ok: false, reason: `snapshot could not be rebuilt: ${caught instanceof Error ? caught.message : String(caught)}` }
  }
  if (snapshot.fingerprint !== decoded.fingerprint) {
    return { ok: false, reason: `rebuilt fingerprint ${snapshot.fingerprint} is not the stored ${decoded.fingerprint}` }
  }
  return { ok: true, snapshot, decoded }
}

/** Decode, check it was made for this configuration, rebuild. Never throws; a refusal says why. */
export function loadSnapshot(buf: Buffer, expected: SnapshotOrigin): LoadResult {
  const result = tryDecodeSnapshot(buf)
  if (!result.ok) return result
  const mismatch = originMismatch(result.decoded, expected)
  if (mismatch !== undefined) return { ok: false, reason: mismatch }
  return rebuildFromDecoded(rebaseDecoded(result.decoded, expected.baseUrl))
}
