/**
 * Keeps the last good snapshot outside the process (a file, Redis) so that a restarted instance
 * serves within a second, even while the CMS is down; and loads the newest stored one at start.
 *
 * A stored snapshot is only ever loaded under the UPSTREAM_URL it was synced from and the BASE_URL
 * its `detail_url`s were rewritten to. Nothing here throws: a target that fails is logged and
 * skipped, and the sync fills in whatever could not be loaded.
 *
 * A change is stored as a patch against the snapshot stored before it (`snapshot-patch.ts`) where
 * the target keeps a patch log, and the whole snapshot only every `patchesPerFull` changes or
 * `fullIntervalMs`: at 100,000 pages an edit then costs the leader what the page costs, not a
 * second of encoding and tens of MB written. A start reads the full snapshot and the patches
 * after it (`patch-chain.ts`).
 * @module
 */
import { settleWithin, TimeoutError } from '../deadline.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { LogSink } from '../observability/log-sink.js'
import { originMismatch, readSnapshotMetadata, type CheckedSnapshot, type EncodeOptions, type SnapshotOrigin, type StoredMetadata } from './snapshot-codec.js'
import { createSnapshotEncoder, type EncodedSnapshot, type SnapshotChunk, type SnapshotEncoder } from './snapshot-encoder.js'
import { chainFrom, loadStoredChain } from './patch-chain.js'
import { encodePatch, patchBetween } from './snapshot-patch.js'

export type PersistLogger = Pick<LogSink, 'info' | 'warn'>

/** Where a snapshot is kept. */
export interface SnapshotTarget {
  /** For logs: `file:/var/lib/cms-shield/snapshot.bin`, `redis:cms-shield:snapshot`. */
  readonly name: string
  /** The stored bytes, or `undefined` when nothing is stored. May throw: the target is then skipped. */
  read(): Promise<Buffer | undefined>
  /**
   * Stores the bytes of a full snapshot, and empties the patch log. Should not throw; if it does,
   * the failure is logged. `chunks`, when the encoder gives them, cut `buf` into ranges known by
   * their digest: a target that keeps chunks by content stores only the new ones (the Redis
   * target); others ignore them. It may answer what it sent, for the log.
   */
  write(buf: Buffer, chunks?: readonly SnapshotChunk[]): Promise<SnapshotWriteReport | void>
  /** Where the target keeps patches after its full snapshot; without one, every change is stored whole. */
  readonly patches?: PatchLog
}

/** What a target sent to store a whole snapshot (the Redis target: the manifest and the chunks it lacked). */
export interface SnapshotWriteReport {
  readonly sentBytes: number
  readonly sentChunks: number
}

/** The patches stored after a target's full snapshot, oldest first. */
export interface PatchLog {
  /**
   * Appends one patch as the log's `position`th (0 = the first after the full snapshot). False
   * when it was not stored there (a failure, or a log another writer changed): the next change is
   * then stored whole. Should not throw.
   */
  append(buf: Buffer, position: number): Promise<boolean>
  /** The patches from `position` on (none when there are none). May throw. */
  read(position: number): Promise<Buffer[]>
}

/** How a snapshot was stored: whole, or as the patch at `index` of the log, from `from`. */
export interface SavedSnapshot {
  readonly fingerprint: string
  readonly version: number
  readonly patch?: { readonly from: string; readonly index: number }
}

export interface SnapshotPersistenceOptions extends SnapshotOrigin, EncodeOptions {
  readonly targets: readonly SnapshotTarget[]
  readonly logger: PersistLogger
  /** A target's read that takes longer is skipped, so a hung store cannot hold up the start. Default 2 s. */
  readonly readTimeoutMs?: number
  /**
   * The largest share of the time saves may take while snapshots keep coming (default
   * {@link SAVE_SHARE}): after a save that took `d`, the next one waits until `d / share` has
   * passed since the first began. A lone save is never held back.
   */
  readonly saveShare?: number
  /** Patches stored between two full snapshots (SNAPSHOT_PATCHES_PER_FULL); default {@link PATCHES_PER_FULL}. 0: always whole. */
  readonly patchesPerFull?: number
  /** A change this long after the last full snapshot is stored whole (SNAPSHOT_FULL_INTERVAL); default 10 minutes. */
  readonly fullIntervalMs?: number
  readonly now?: () => number
  /**
   * Encodes whole snapshots, keeping what it compressed for the next one (default: an encoder of
   * this persistence's own). One encoder serves every target: the bytes are encoded once.
   */
  readonly encoder?: SnapshotEncoder
  /** Waits between saves (tests pass a fake). */
  readonly sleep?: (ms: number) => Promise<void>
}

/**
 * On a large tree the first whole save costs seconds of CPU (serialising every page, compressing);
 * later ones compress only the groups that changed (`snapshot-encoder.ts`), little after a
 * one-page edit, more after a sync that changed many pages. An edit is swapped in far sooner than
 * that, so a stream of edits would otherwise keep saving back to back and take a core from the
 * requests (docs/performance.md, "Edits across a cluster"). With a share of 0.2, saving takes at most a fifth of the time;
 * the newest snapshot is always the one written, and small trees, whose saves take milliseconds,
 * wait milliseconds.
 */
export const SAVE_SHARE = 0.2

/** The defaults of SNAPSHOT_PATCHES_PER_FULL and SNAPSHOT_FULL_INTERVAL (`config/schema.ts`). */
export const PATCHES_PER_FULL = 50
const FULL_INTERVAL_MS = 10 * 60_000

/**
 * More changed pages than this are stored whole: a patch of thousands of pages is encoded in one
 * call, and a follower rebuilding from it costs as much as loading the whole snapshot.
 */
export const MAX_PATCH_PAGES = 2_000

export interface LoadedSnapshot {
  readonly snapshot: Snapshot
  /** The target's name. */
  readonly source: string
}

export interface SnapshotPersistence {
  /**
   * Encodes the snapshot once (whole, or as a patch against the last one stored) and writes it to
   * every target. Saves do not overlap: one asked for while another runs is written after it (held
   * back so saves take at most `saveShare` of the time), and of several waiting only the newest is
   * written. Resolves once the snapshot (or a newer one) has been written or has failed, with how
   * the newest was stored (`undefined`: it was not); never rejects. `full` stores it whole (a
   * store that lost it).
   */
  save(snapshot: Snapshot, options?: { readonly full?: boolean }): Promise<SavedSnapshot | undefined>
  /**
   * The newest stored snapshot made for this configuration, rebuilt; `undefined` when there is none.
   * For a start, before the instance listens: it decompresses on the event loop, which then answers
   * nothing for the length of the load.
   */
  loadNewest(): Promise<LoadedSnapshot | undefined>
  /**
   * Another instance may have stored snapshots since this one last did (its part in the cluster
   * changed): the next save stores the whole snapshot, never a patch onto a log it no longer writes.
   */
  forgetStored(): void
}

interface Candidate {
  readonly source: string
  /** The full snapshot, its checksum checked once (by `readSnapshotMetadata`). */
  readonly snapshot: CheckedSnapshot
  readonly metadata: StoredMetadata
  /** The stored patches that chain from the full snapshot. */
  readonly patches: readonly Buffer[]
  /** When the newest of them (or the full snapshot) was synced, and its version: what candidates are ordered by. */
  readonly syncedAt: number
  readonly version: number
}

export function createSnapshotPersistence(options: SnapshotPersistenceOptions): SnapshotPersistence {
  const { targets, logger } = options
  const origin: SnapshotOrigin = { upstreamUrl: options.upstreamUrl, baseUrl: options.baseUrl }
  const encodeOptions: EncodeOptions = options.compression ? { compression: options.compression } : {}
  const readTimeoutMs = options.readTimeoutMs ?? 2000
  const now = options.now ?? Date.now
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const saveShare = options.saveShare ?? SAVE_SHARE
  if (!(saveShare > 0 && saveShare <= 1)) throw new RangeError(`saveShare must be in (0, 1], got ${saveShare}`)
  const patchesPerFull = options.patchesPerFull ?? PATCHES_PER_FULL
  const encoder = options.encoder ?? createSnapshotEncoder()
  const fullIntervalMs = options.fullIntervalMs ?? FULL_INTERVAL_MS
  const patchLogs = targets.every((target) => target.patches !== undefined) ? targets.map((target) => target.patches!) : undefined
  let waiting: Snapshot | undefined
  let waitingFull = false
  let saving: Promise<void> | undefined
  /** The callers waiting to learn how their snapshot (or the newer one written instead) was stored. */
  const callers: Array<(saved: SavedSnapshot | undefined) => void> = []
  /** The snapshot last stored, what the next patch applies to: kept only while every target holds it. */
  let stored: { readonly snapshot: Snapshot; readonly fullAt: number; readonly patches: number } | undefined

  /** Past the bounds: the snapshot stored last is written whole again once nothing else waits. */
  const compactionDue = () => stored !== undefined && stored.patches > 0 && (stored.patches >= patchesPerFull || now() - stored.fullAt >= fullIntervalMs)

  /** Stores `snapshot` as a patch against the one stored last, when that is allowed and cheaper; false when not stored so. */
  async function savePatch(snapshot: Snapshot, heldMs: number): Promise<SavedSnapshot | false> {
    // Patches go on past the bounds only while the whole snapshot waits to be written (snapshots
    // coming back to back); twice the bounds, the change itself is stored whole.
    if (!patchLogs || !stored || patchesPerFull === 0 || stored.patches >= 2 * patchesPerFull || now() - stored.fullAt >= 2 * fullIntervalMs) return false
    const started = now()
    let patch: ReturnType<typeof patchBetween>
    let buf: Buffer
    try {
      patch = patchBetween(stored.snapshot, snapshot, origin, MAX_PATCH_PAGES)
      if (!patch) return false
      buf = encodePatch(patch)
    } catch (caught) {
      logger.warn({ err: caught, version: snapshot.version }, 'snapshot: making the patch failed; storing the snapshot whole')
      return false
    }
    const index = stored.patches
    const appended = await Promise.all(patchLogs.map((log) => log.append(buf, index).catch(() => false)))
    if (appended.includes(false)) {
      logger.warn({ version: snapshot.version, index }, 'snapshot: a patch was not stored where expected; storing the snapshot whole')
      return false
    }
    stored = { snapshot, fullAt: stored.fullAt, patches: index + 1 }
    logger.info(
      {
        version: snapshot.version, pages: snapshot.pages.length, changedPages: patch.pages.length, bytes: buf.length, index, durationMs: now() - started,
        ...(heldMs > 0 ? { heldMs } : {}), targets: targets.map((t) => t.name),
      },
      'snapshot: saved as a patch',
    )
    return { fingerprint: snapshot.fingerprint, version: snapshot.version, patch: { from: patch.from, index } }
  }

  async function saveNow(snapshot: Snapshot, heldMs: number, full: boolean): Promise<SavedSnapshot | undefined> {
    const patched = full ? false : await savePatch(snapshot, heldMs)
    if (patched) return patched
    stored = undefined
    const started = now()
    let encoded: EncodedSnapshot
    try {
      encoded = await encoder.encode(snapshot, origin, encodeOptions)
    } catch (caught) {
      logger.warn({ err: caught, version: snapshot.version }, 'snapshot: encoding failed; nothing written')
      return undefined
    }
    const encodeMs = now() - started
    const { buf, chunks } = encoded
    const sent: Record<string, SnapshotWriteReport> = {}
    const written = await Promise.all(
      targets.map(async (target) => {
        try {
          const report = await target.write(buf, chunks)
          if (report) sent[target.name] = report
          return true
        } catch (caught) {
          logger.warn({ err: caught, target: target.name, version: snapshot.version }, 'snapshot: write failed')
          return false
        }
      }),
    )
    // Patches go on only over a full snapshot every target holds.
    if (!written.includes(false)) stored = { snapshot, fullAt: started, patches: 0 }
    logger.info(
      {
        version: snapshot.version, pages: snapshot.pages.length, bytes: buf.length, encodeMs, groups: encoded.groups, reusedGroups: encoded.reused,
        durationMs: now() - started,
        ...(heldMs > 0 ? { heldMs } : {}), targets: targets.map((t) => t.name), ...(Object.keys(sent).length > 0 ? { sent } : {}),
      },
      'snapshot: saved',
    )
    return { fingerprint: snapshot.fingerprint, version: snapshot.version }
  }

  async function drain(): Promise<void> {
    let heldMs = 0
    while (waiting !== undefined) {
      const next = waiting
      const full = waitingFull
      const told = callers.splice(0)
      waiting = undefined
      waitingFull = false
      const started = now()
      const saved = await saveNow(next, heldMs, full)
      const savedMs = now() - started
      // Told at once, before any compaction below: the announcement of a patch goes out while the
      // patch is still in the log. A caller whose snapshot a newer one replaced learns the newer one.
      for (const tell of told) tell(saved)
      if (waiting === undefined && compactionDue()) {
        // The whole snapshot, written after the patch was announced: followers read the patch
        // meanwhile, and the log starts again.
        await new Promise<void>((resolve) => setImmediate(resolve))
        await saveNow(stored!.snapshot, 0, true)
      }
      if (waiting === undefined) break
      // Another snapshot came while this one was saved: keep saving to its share of the time. The
      // compaction's own time is not held against it: it runs once per SNAPSHOT_PATCHES_PER_FULL
      // changes and only when nothing waited, and holding the next change's patch four times its
      // length would keep followers from seeing that change for over a second.
      heldMs = Math.max(0, Math.round(savedMs * (1 / saveShare - 1)))
      if (heldMs > 0) await sleep(heldMs)
    }
    saving = undefined
  }

  async function readCandidate(target: SnapshotTarget): Promise<Candidate | undefined> {
    let buf: Buffer | undefined
    try {
      buf = await settleWithin(`snapshot read from ${target.name}`, () => target.read(), readTimeoutMs)
    } catch (caught) {
      if (caught instanceof TimeoutError) {
        logger.warn({ target: target.name, readTimeoutMs }, 'snapshot: skipped, the read timed out')
        return undefined
      }
      logger.warn({ err: caught, target: target.name }, 'snapshot: skipped, the read failed')
      return undefined
    }
    if (buf === undefined) {
      logger.info({ target: target.name }, 'snapshot: none stored')
      return undefined
    }
    const read = readSnapshotMetadata(buf)
    if (!read.ok) {
      logger.warn({ target: target.name, bytes: buf.length, reason: read.reason }, `snapshot: skipped, ${read.reason}`)
      return undefined
    }
    const mismatch = originMismatch(read.metadata, origin)
    if (mismatch !== undefined) {
      logger.warn({ target: target.name, reason: mismatch }, `snapshot: skipped, ${mismatch}`)
      return undefined
    }
    let stored: Buffer[] = []
    if (target.patches) {
      try {
        stored = await settleWithin(`patches read from ${target.name}`, () => target.patches!.read(0), readTimeoutMs)
      } catch (caught) {
        logger.warn({ err: caught, target: target.name }, 'snapshot: the patches could not be read; the full snapshot alone is loaded')
      }
    }
    const chain = chainFrom(read.metadata.fingerprint, stored)
    const last = chain.at(-1)?.metadata ?? read.metadata
    return { source: target.name, snapshot: read.snapshot, metadata: read.metadata, patches: chain.map((link) => link.buf), syncedAt: last.syncedAt, version: last.version }
  }

  return {
    save(snapshot, saveOptions) {
      waiting = snapshot
      waitingFull ||= saveOptions?.full === true
      const told = new Promise<SavedSnapshot | undefined>((resolve) => callers.push(resolve))
      saving ??= drain()
      return told
    },

    forgetStored() {
      stored = undefined
      // The role changed: a follower that no longer saves keeps no compressed groups (about the
      // stored size); a new leader's first whole save compresses every group.
      encoder.forget()
    },

    async loadNewest() {
      const started = now()
      const candidates = (await Promise.all(targets.map(readCandidate))).filter((c): c is Candidate => c !== undefined)
      // Newest sync first; on a tie the higher version, then the targets' order.
      candidates.sort((a, b) => b.syncedAt - a.syncedAt || b.version - a.version)
      for (const [index, candidate] of candidates.entries()) {
        // Only a start loads this way, before the instance listens: decompressed on this thread.
        const chain = loadStoredChain(candidate.snapshot, candidate.patches, origin)
        const loaded = chain.result
        if (chain.why !== undefined) logger.warn({ target: candidate.source, reason: chain.why, patches: chain.patches }, 'snapshot: not every stored patch could be applied')
        if (!loaded.ok) {
          logger.warn({ target: candidate.source, reason: loaded.reason }, `snapshot: skipped, ${loaded.reason}`)
          continue
        }
        const { snapshot } = loaded
        for (const older of candidates.slice(index + 1)) {
          logger.info(
            { target: older.source, syncedAt: older.syncedAt, version: older.version, loadedFrom: candidate.source },
            'snapshot: skipped, not newer than the one loaded',
          )
        }
        logger.info(
          {
            target: candidate.source, version: snapshot.version, pages: snapshot.pages.length, syncedAt: snapshot.syncedAt,
            patches: chain.patches, ageMs: now() - snapshot.syncedAt, durationMs: now() - started,
          },
          'snapshot: loaded',
        )
        return { snapshot, source: candidate.source }
      }
      return undefined
    },
  }
}
