/**
 * The shared copy of the last good snapshot in Redis, kept by chunk: `${prefix}snapshot` holds a
 * manifest (`persist/chunk-manifest.ts`) and each chunk lives at
 * `${prefix}snapshot:chunk:<digest>`. Consecutive whole saves share almost all their chunks (the
 * encoder reuses every group an edit did not touch, `persist/snapshot-encoder.ts`), so a whole
 * save after a one-page edit sends Redis the manifest and the few new chunks, not the whole
 * snapshot (docs/performance.md, "Whole saves sent by chunk").
 *
 * Writing, in a handful of round trips (pipelines; a Cluster gets the same commands one by one,
 * all in flight at once, since a pipeline there must stay within one slot):
 *
 * 1. read the current manifest (its first bytes: a legacy whole snapshot is not read whole);
 * 2. ask the TTL of each chunk the new manifest names that the one this target wrote last did not;
 * 3. SET the missing ones with an expiry ({@link PENDING_CHUNK_MS}): a writer that dies before
 *    step 4 leaks nothing for long;
 * 4. SET the manifest, then DEL the patch log;
 * 5. PERSIST the chunks of step 2 that had an expiry or were missing, and expire after
 *    {@link CHUNK_GRACE_MS} those only the previous manifest named.
 *
 * A reader never gets a partial buffer: a chunk missing, short or not matching its digest is
 * "nothing stored", and the start syncs from the CMS. A whole buffer at the key (an earlier
 * build's, or a write without chunks) is read as it is.
 *
 * While one leader writes, the manifest at the key is the one it wrote last, whose chunks it
 * stored and persisted, so it asks only about the new ones (and about all of them once
 * {@link TRUST_MS} has passed). Should two instances write at once
 * (the lease forbids it, but a paused leader may not know it lost it), a manifest may end up
 * naming a chunk the other expired: readers then find it missing and sync from the CMS, until a
 * whole save that asks about every chunk (one that did not write the manifest at the key, or
 * after {@link TRUST_MS}) stores it again.
 * @module
 */
import { createHash } from 'node:crypto'
import { decodeManifest, encodeManifest, isChunkManifest, manifestLength, type ChunkManifest } from '../persist/chunk-manifest.js'
import type { SnapshotChunk } from '../persist/snapshot-encoder.js'
import type { SnapshotTarget, SnapshotWriteReport } from '../persist/snapshot-persistence.js'
import { boundedCommand } from './stores/bounded-command.js'
import type { RedisClient, RedisStoreLogger } from './stores/redis-store.js'

/**
 * A chunk stored but not yet named by a manifest expires after this: a writer that stops
 * between storing chunks and the manifest leaves nothing behind for long, and an hour is far
 * longer than any write takes.
 */
export const PENDING_CHUNK_MS = 60 * 60_000

/**
 * A chunk the new manifest no longer names expires after this, not at once: a reader that got
 * the previous manifest just before may still be fetching its chunks (a start reads them within
 * the snapshot read timeout, 2 s by default, `persist/snapshot-persistence.ts`).
 */
export const CHUNK_GRACE_MS = 5 * 60_000

/**
 * A chunk found with less than this to live is stored again, not reused: it is one a previous
 * manifest dropped, and it could expire before step 5 persists it.
 */
const REUSE_MARGIN_MS = 60_000

/**
 * A writer trusts the manifest it wrote last (its chunks were stored and persisted then) for at
 * most this long after it last asked about every chunk: a chunk lost since (evicted under an
 * `allkeys-*` policy, deleted by hand) is stored again by the next whole save after that, at the
 * cost of asking the TTL of every chunk once (docs/performance.md, "Whole saves sent by chunk").
 */
export const TRUST_MS = 60 * 60_000

/** The current value's first bytes read to learn which manifest it is: enough for about 7,000 chunks. */
const MANIFEST_PROBE_BYTES = 256 * 1024

export interface RedisSnapshotTargetOptions {
  /** The snapshot connection (its command timeout is the longer one snapshots need). */
  readonly client: RedisClient
  /** `${REDIS_PREFIX}`: the keys are `${prefix}snapshot`, `${prefix}snapshot:patches` and `${prefix}snapshot:chunk:<digest>`. */
  readonly prefix: string
  /** Each step of a read or a write is bounded by this (`boundedCommand`). */
  readonly timeoutMs: number
  readonly logger: RedisStoreLogger
  /** Default `Date.now`. */
  readonly now?: () => number
}

type Command = [name: string, ...args: (string | number | Buffer)[]]

export function createRedisSnapshotTarget(options: RedisSnapshotTargetOptions): SnapshotTarget {
  const { client, prefix, timeoutMs, logger } = options
  const now = options.now ?? Date.now
  const snapshotKey = `${prefix}snapshot`
  const patchesKey = `${prefix}snapshot:patches`
  const chunkKey = (digest: string) => `${prefix}snapshot:chunk:${digest}`
  const command = <T>(operation: string, run: () => Promise<T>) => boundedCommand(operation, run, timeoutMs)
  /**
   * The manifest this target wrote last, the digests it names (stored and persisted then), and
   * when this target last asked about every chunk it names.
   */
  let last: { readonly bytes: Buffer; readonly digests: ReadonlySet<string>; readonly checkedAt: number } | undefined

  /** Runs `commands` in one pipeline (one by one on a Cluster); throws on the first that failed. */
  async function batch(operation: string, commands: Command[]): Promise<unknown[]> {
    if (commands.length === 0) return []
    if (client.isCluster) return command(operation, () => Promise.all(commands.map(([name, ...args]) => client.call(name, ...args))))
    const results = await command(operation, () => client.pipeline(commands).exec())
    if (results === null) throw new Error(`redis ${operation}: the pipeline was discarded`)
    return results.map(([error, value]) => {
      if (error) throw error
      return value
    })
  }

  /** The manifest at the key, if it holds one (not a whole buffer, not nothing). */
  async function currentManifest(): Promise<{ readonly bytes: Buffer; readonly manifest: ChunkManifest } | undefined> {
    const head = await command('getrange snapshot', () => client.getrangeBuffer(snapshotKey, 0, MANIFEST_PROBE_BYTES - 1))
    const length = manifestLength(head)
    if (length === undefined) return undefined
    const bytes = length > head.length
      ? Buffer.concat([head, await command('getrange snapshot', () => client.getrangeBuffer(snapshotKey, head.length, length - 1))])
      : head
    const decoded = decodeManifest(bytes)
    return decoded.ok ? { bytes, manifest: decoded.manifest } : undefined
  }

  /** Expires the chunks only `previous` named, after the grace. */
  function dropped(previous: ChunkManifest | undefined, kept: ReadonlySet<string>): Command[] {
    const digests = new Set(previous?.chunks.map((chunk) => chunk.digest))
    return [...digests].filter((digest) => !kept.has(digest)).map((digest) => ['pexpire', chunkKey(digest), CHUNK_GRACE_MS])
  }

  /** Stores the manifest, then empties the patch log (see `write` below for the order). */
  async function replace(value: Buffer): Promise<void> {
    await command('set snapshot', () => client.set(snapshotKey, value))
    await command('del snapshot patches', () => client.del(patchesKey))
  }

  async function writeChunks(buf: Buffer, chunks: readonly SnapshotChunk[]): Promise<SnapshotWriteReport> {
    const manifestBytes = encodeManifest({ totalLength: buf.length, chunks: chunks.map(({ digest, length }) => ({ digest, length })) })
    const previous = await currentManifest()
    const started = now()
    const trust = previous !== undefined && last !== undefined && previous.bytes.equals(last.bytes) && started - last.checkedAt < TRUST_MS ? last : undefined
    const trusted = trust?.digests ?? new Set<string>()
    last = undefined
    const bytesOf = new Map(chunks.map((chunk) => [chunk.digest, chunk]))
    const unknown = [...bytesOf.keys()].filter((digest) => !trusted.has(digest))
    const ttls = await batch('pttl snapshot chunks', unknown.map((digest) => ['pttl', chunkKey(digest)]))
    const missing = unknown.filter((_, index) => {
      const ttl = ttls[index] as number
      return ttl === -2 || (ttl >= 0 && ttl < REUSE_MARGIN_MS)
    })
    let sentBytes = manifestBytes.length
    await batch('set snapshot chunks', missing.map((digest) => {
      const { offset, length } = bytesOf.get(digest)!
      sentBytes += length
      return ['set', chunkKey(digest), buf.subarray(offset, offset + length), 'PX', PENDING_CHUNK_MS]
    }))
    await replace(manifestBytes)
    const digests = new Set(bytesOf.keys())
    // A chunk found without an expiry (-1) is persistent already: only the others are named again.
    const expiring = unknown.filter((_, index) => ttls[index] !== -1)
    await batch('persist snapshot chunks', [...expiring.map((digest): Command => ['persist', chunkKey(digest)]), ...dropped(previous?.manifest, digests)])
    last = { bytes: manifestBytes, digests, checkedAt: trust?.checkedAt ?? started }
    return { sentBytes, sentChunks: missing.length }
  }

  return {
    name: `redis:${snapshotKey}`,

    // A failed or slow read is "nothing stored"; so is a manifest whose chunks are not all there.
    async read() {
      const value = await command('get snapshot', () => client.getBuffer(snapshotKey)).catch(() => null)
      if (value === null) return undefined
      if (!isChunkManifest(value)) return value
      const decoded = decodeManifest(value)
      if (!decoded.ok) {
        logger.warn({ key: snapshotKey, reason: decoded.reason }, `snapshot: the chunk manifest in Redis is refused, ${decoded.reason}`)
        return undefined
      }
      const { chunks, totalLength } = decoded.manifest
      const keys = chunks.map((chunk) => chunkKey(chunk.digest))
      let values: (Buffer | null)[]
      try {
        values = await command('mget snapshot chunks', () =>
          client.isCluster ? Promise.all(keys.map((key) => client.getBuffer(key))) : keys.length === 0 ? Promise.resolve([]) : client.mgetBuffer(keys))
      } catch (caught) {
        logger.warn({ err: caught, key: snapshotKey, chunks: chunks.length }, 'snapshot: the chunks in Redis could not be read')
        return undefined
      }
      for (const [index, chunk] of chunks.entries()) {
        const bytes = values[index]
        const why = bytes === null || bytes === undefined ? 'is missing'
          : bytes.length !== chunk.length ? `is ${bytes.length} bytes, not ${chunk.length}`
          : createHash('sha256').update(bytes).digest('base64url') !== chunk.digest ? 'does not match its digest'
          : undefined
        if (why !== undefined) {
          logger.warn({ key: keys[index], chunk: index, chunks: chunks.length }, `snapshot: a chunk in Redis ${why}; read as nothing stored`)
          return undefined
        }
      }
      const buf = Buffer.concat(values as Buffer[])
      // The manifest checked that its lengths add up; this checks the bytes themselves.
      if (buf.length === totalLength) return buf
      logger.warn({ key: snapshotKey, bytes: buf.length, totalLength }, 'snapshot: the chunks in Redis do not add up to the manifest; read as nothing stored')
      return undefined
    },

    // A failed write throws, so that no patch is stored over a full snapshot Redis does not hold.
    // The patches of the one before go after it: a reader between the two commands finds patches
    // that do not apply to the new full snapshot, and ignores them (`patch-chain.ts`).
    async write(buf, chunks) {
      if (chunks !== undefined && chunks.length > 0) return writeChunks(buf, chunks)
      // Whole (compression 'none'): the value replaces the manifest, whose chunks then expire.
      const previous = await currentManifest()
      last = undefined
      await replace(buf)
      await batch('expire snapshot chunks', dropped(previous?.manifest, new Set()))
      return { sentBytes: buf.length, sentChunks: 0 }
    },

    patches: {
      // RPUSH answers the list's new length: anything but `position + 1` means the list is not the
      // one this instance wrote (Redis lost it, or another instance stored a full snapshot since).
      append: async (buf, position) => (await command('rpush snapshot patch', () => client.rpush(patchesKey, buf))) === position + 1,
      read: (position) => command('lrange snapshot patches', () => client.lrangeBuffer(patchesKey, position, -1)),
    },
  }
}
