/**
 * Keeps the last good snapshot outside the process (a file, Redis) so that a restarted instance
 * serves within a second, even while the CMS is down; and loads the newest stored one at start.
 *
 * A stored snapshot is only ever loaded under the UPSTREAM_URL it was synced from and the BASE_URL
 * its `detail_url`s were rewritten to. Nothing here throws: a target that fails is logged and
 * skipped, and the sync fills in whatever could not be loaded.
 * @module
 */
import { settleWithin, TimeoutError } from '../deadline.js'
import type { Snapshot } from '../tree/snapshot.js'
import type { LogSink } from '../observability/log-sink.js'
import {
  encodeSnapshotOfAsync, originMismatch, readSnapshotMetadata, rebaseDecoded, rebuildFromDecoded, tryDecodeSnapshot,
  type EncodeOptions, type SnapshotOrigin, type StoredMetadata,
} from './snapshot-codec.js'

export type PersistLogger = Pick<LogSink, 'info' | 'warn'>

/** Where a snapshot is kept. */
export interface SnapshotTarget {
  /** For logs: `file:/var/lib/cms-shield/snapshot.bin`, `redis:cms-shield:snapshot`. */
  readonly name: string
  /** The stored bytes, or `undefined` when nothing is stored. May throw: the target is then skipped. */
  read(): Promise<Buffer | undefined>
  /** Stores the bytes. Should not throw; if it does, the failure is logged. */
  write(buf: Buffer): Promise<void>
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
  readonly now?: () => number
  /** Waits between saves (tests pass a fake). */
  readonly sleep?: (ms: number) => Promise<void>
}

/**
 * At 100,000 pages one save costs about a second of CPU (serialising every page, compressing).
 * An edit is swapped in within a fraction of a second, so a stream of edits would otherwise keep
 * saving back to back and take a core from the requests (throughput during swaps would fall to
 * a third with SNAPSHOT_FILE set). With a share of 0.2, saving takes at most a fifth of the time;
 * the newest snapshot is always the one written, and small trees, whose saves take milliseconds,
 * wait milliseconds.
 */
export const SAVE_SHARE = 0.2

export interface LoadedSnapshot {
  readonly snapshot: Snapshot
  /** The target's name. */
  readonly source: string
}

export interface SnapshotPersistence {
  /**
   * Encodes the snapshot once and writes it to every target. Saves do not overlap: one asked for
   * while another runs is written after it (held back so saves take at most `saveShare` of the
   * time), and of several waiting only the newest is written. Resolves once the snapshot (or a
   * newer one) has been written or has failed; never rejects.
   */
  save(snapshot: Snapshot): Promise<void>
  /** The newest stored snapshot made for this configuration, rebuilt; `undefined` when there is none. */
  loadNewest(): Promise<LoadedSnapshot | undefined>
}

interface Candidate {
  readonly source: string
  readonly buf: Buffer
  readonly metadata: StoredMetadata
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
  let waiting: Snapshot | undefined
  let saving: Promise<void> | undefined

  async function saveNow(snapshot: Snapshot, heldMs: number): Promise<void> {
    const started = now()
    let buf: Buffer
    try {
      buf = await encodeSnapshotOfAsync(snapshot, origin, encodeOptions)
    } catch (caught) {
      logger.warn({ err: caught, version: snapshot.version }, 'snapshot: encoding failed; nothing written')
      return
    }
    const encodeMs = now() - started
    await Promise.all(
      targets.map(async (target) => {
        try {
          await target.write(buf)
        } catch (caught) {
          logger.warn({ err: caught, target: target.name, version: snapshot.version }, 'snapshot: write failed')
        }
      }),
    )
    logger.info(
      {
        version: snapshot.version, pages: snapshot.pages.length, bytes: buf.length, encodeMs, durationMs: now() - started,
        ...(heldMs > 0 ? { heldMs } : {}), targets: targets.map((t) => t.name),
      },
      'snapshot: saved',
    )
  }

  async function drain(): Promise<void> {
    let heldMs = 0
    while (waiting !== undefined) {
      const next = waiting
      waiting = undefined
      const started = now()
      await saveNow(next, heldMs)
      if (waiting === undefined) break
      // Another snapshot came while this one was saved: keep saving to its share of the time.
      heldMs = Math.max(0, Math.round((now() - started) * (1 / saveShare - 1)))
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
    return { source: target.name, buf, metadata: read.metadata }
  }

  return {
    save(snapshot) {
      waiting = snapshot
      saving ??= drain()
      return saving
    },

    async loadNewest() {
      const started = now()
      const candidates = (await Promise.all(targets.map(readCandidate))).filter((c): c is Candidate => c !== undefined)
      // Newest sync first; on a tie the higher version, then the targets' order.
      candidates.sort((a, b) => b.metadata.syncedAt - a.metadata.syncedAt || b.metadata.version - a.metadata.version)
      for (const [index, candidate] of candidates.entries()) {
        const decoded = tryDecodeSnapshot(candidate.buf)
        const loaded = decoded.ok ? rebuildFromDecoded(rebaseDecoded(decoded.decoded, origin.baseUrl)) : decoded
        if (!loaded.ok) {
          logger.warn({ target: candidate.source, reason: loaded.reason }, `snapshot: skipped, ${loaded.reason}`)
          continue
        }
        const { snapshot } = loaded
        for (const older of candidates.slice(index + 1)) {
          logger.info(
            { target: older.source, syncedAt: older.metadata.syncedAt, version: older.metadata.version, loadedFrom: candidate.source },
            'snapshot: skipped, not newer than the one loaded',
          )
        }
        logger.info(
          {
            target: candidate.source, version: snapshot.version, pages: snapshot.pages.length, syncedAt: snapshot.syncedAt,
            ageMs: now() - snapshot.syncedAt, durationMs: now() - started,
          },
          'snapshot: loaded',
        )
        return { snapshot, source: candidate.source }
      }
      return undefined
    },
  }
}
