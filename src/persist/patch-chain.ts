/**
 * A full snapshot and the patches stored after it (`snapshot-patch.ts`): read as one snapshot at
 * start, and followed patch by patch by an instance already serving one of them.
 *
 * A store keeps the patches in the order they were written, each keyed by the fingerprint it
 * applies to, so a chain is followed only as long as each patch's base is the snapshot before
 * it: a patch left over from an older full snapshot (written before the full one replaced it, or
 * by another instance) simply ends the chain, and what came before it is still served.
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'
import {
  originMismatch, rebaseDecoded, rebuildFromDecoded, tryDecodeSnapshot, tryDecodeSnapshotAsync, type DecodeResult, type DecodedSnapshot, type LoadResult,
  type CheckedSnapshot, type SnapshotOrigin,
} from './snapshot-codec.js'
import { applyPatch, decodePatch, patchedPages, readPatchMetadata, rebasePatch, type PatchMetadata, type SnapshotPatch } from './snapshot-patch.js'

/** The patches among `buffers`, in order, that follow one another from `fingerprint` on: their headers only. */
export function chainFrom(fingerprint: string, buffers: readonly Buffer[]): { readonly buf: Buffer; readonly metadata: PatchMetadata }[] {
  const chain: { buf: Buffer; metadata: PatchMetadata }[] = []
  let at = fingerprint
  for (const buf of buffers) {
    const read = readPatchMetadata(buf)
    if (!read.ok || read.metadata.from !== at) break
    chain.push({ buf, metadata: read.metadata })
    at = read.metadata.fingerprint
  }
  return chain
}

/**
 * The decoded full snapshot with the chain's patches laid over its pages, as one decoded snapshot
 * whose metadata is the last patch's: built once (`rebuildFromDecoded`), and checked against the
 * last fingerprint, however many patches there are. `why` is set when a patch could not be read or
 * did not fit, and the pages stop at the patch before it.
 */
function fold(decoded: DecodedSnapshot, patches: readonly SnapshotPatch[]): { decoded: DecodedSnapshot; applied: number; why?: string } {
  let current = decoded
  let applied = 0
  // One copy of the pages, replaced in place by patches that keep the order (an edit), with one
  // map of positions for them all: 50 edits at 100,000 pages cost 50 lookups, not 50 copies.
  let pages = [...decoded.pages]
  let positions: Map<number, number> | undefined
  for (const patch of patches) {
    if (patch.order === undefined && patch.pageCount === pages.length) {
      positions ??= new Map(pages.map((page, index) => [page.id, index]))
      const at = patch.pages.map((page) => positions!.get(page.id))
      const missing = at.indexOf(undefined)
      if (missing >= 0) return { decoded: current, applied, why: `the patch replaces page ${patch.pages[missing]!.id}, which the base does not hold` }
      patch.pages.forEach((page, i) => (pages[at[i]!] = page))
    } else {
      const next = patchedPages(pages, patch, (page) => page, (id) => (positions ??= new Map(pages.map((page, index) => [page.id, index]))).get(id))
      if (typeof next === 'string') return { decoded: current, applied, why: next }
      pages = next
      positions = undefined
    }
    const { from: _from, order: _order, pageCount: _count, pages: _pages, ...metadata } = patch
    current = { ...current, ...metadata, pages }
    applied++
  }
  return { decoded: current, applied }
}

export interface ChainLoad {
  readonly result: LoadResult
  /** Patches applied over the full snapshot. */
  readonly patches: number
  /** Why the chain stopped short of its end, or why the patches were not used at all. */
  readonly why?: string
}

/**
 * The snapshot a full snapshot (decoded, on this instance's BASE_URL) and the patches after it
 * make. When the patched snapshot cannot be rebuilt to the last patch's fingerprint, the full
 * snapshot alone is served (older, but the syncing instance stored it as it was).
 */
export function loadChain(decoded: DecodedSnapshot, buffers: readonly Buffer[], baseUrl: string): ChainLoad {
  const chain = chainFrom(decoded.fingerprint, buffers)
  const patches: SnapshotPatch[] = []
  let why: string | undefined
  for (const { buf } of chain) {
    const read = decodePatch(buf)
    if (!read.ok) {
      why = read.reason
      break
    }
    patches.push(rebasePatch(read.patch, baseUrl))
  }
  if (patches.length > 0) {
    const folded = fold(decoded, patches)
    const result = rebuildFromDecoded(folded.decoded)
    if (result.ok) return { result, patches: folded.applied, ...(folded.why ?? why ? { why: folded.why ?? why } : {}) }
    why = result.reason
  }
  return { result: rebuildFromDecoded(decoded), patches: 0, ...(why ? { why } : {}) }
}

/**
 * {@link loadChain} of stored bytes: decoded (decompressed on libuv's thread pool,
 * `tryDecodeSnapshotAsync`), checked to be made for `origin`, put on its BASE_URL. Never rejects.
 */
export async function loadStoredChainAsync(buf: Buffer, patches: readonly Buffer[], origin: SnapshotOrigin): Promise<ChainLoad> {
  return chainOfDecoded(await tryDecodeSnapshotAsync(buf), patches, origin)
}

/**
 * {@link loadStoredChainAsync} with the parts decompressed on the calling thread, one after
 * another: for a start, before the instance listens, when there is nothing to keep answering.
 * It costs less CPU and less time, even against the thread pool's several cores: a part per group
 * handed to the pool costs more than it spreads (docs/performance.md, "a start decompresses in place").
 */
export function loadStoredChain(stored: Buffer | CheckedSnapshot, patches: readonly Buffer[], origin: SnapshotOrigin): ChainLoad {
  return chainOfDecoded(tryDecodeSnapshot(stored), patches, origin)
}

function chainOfDecoded(decoded: DecodeResult, patches: readonly Buffer[], origin: SnapshotOrigin): ChainLoad {
  if (!decoded.ok) return { result: decoded, patches: 0 }
  const mismatch = originMismatch(decoded.decoded, origin)
  if (mismatch !== undefined) return { result: { ok: false, reason: mismatch }, patches: 0 }
  return loadChain(rebaseDecoded(decoded.decoded, origin.baseUrl), patches, origin.baseUrl)
}

/**
 * `base` followed through the patches among `buffers` that chain from it, each applied as the
 * syncing instance built it and checked by its fingerprint; `undefined` when not even the first
 * applies (another base, a patch that does not fit), and the reason.
 */
export function followPatches(base: Snapshot, buffers: readonly Buffer[], baseUrl: string): { snapshot?: Snapshot; applied: number; why?: string } {
  let snapshot = base
  let applied = 0
  for (const { buf } of chainFrom(base.fingerprint, buffers)) {
    const read = decodePatch(buf)
    const result = read.ok ? applyPatch(snapshot, rebasePatch(read.patch, baseUrl)) : read
    if (!result.ok) return { ...(applied > 0 ? { snapshot } : {}), applied, why: result.reason }
    snapshot = result.snapshot
    applied++
  }
  return applied > 0 ? { snapshot, applied } : { applied, why: `no stored patch applies to ${base.fingerprint}` }
}
