import { createHash, randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHUNK_GRACE_MS, createRedisSnapshotTarget, PENDING_CHUNK_MS, TRUST_MS } from '../../src/cache/redis-snapshot-target.js'
import { createSharedTier, type SharedTier } from '../../src/cache/shared-tier.js'
import { loadConfig } from '../../src/config/load-config.js'
import { encodeManifest } from '../../src/persist/chunk-manifest.js'
import type { SnapshotChunk } from '../../src/persist/snapshot-encoder.js'
import { createSnapshotPersistence, type SnapshotTarget } from '../../src/persist/snapshot-persistence.js'
import { buildSnapshot, type SyncedPage } from '../../src/tree/build-snapshot.js'
import type { Snapshot } from '../../src/tree/snapshot.js'
import { DEFAULT_DIALECT } from '../helpers/make-snapshot.js'
import { recordingLogger } from '../helpers/recording-logger.js'
import { sharedRedisUrl, startRedis, type RedisServer } from '../helpers/redis-server.js'

const ORIGIN = { upstreamUrl: 'http://127.0.0.1:9/api/v2/', baseUrl: 'http://127.0.0.1:8080' }

const CHUNK_BYTES = 64 * 1024
const CHUNKS = 24

/** `parts` concatenated, with one chunk per part. */
function chunked(parts: readonly Buffer[]): { buf: Buffer; chunks: SnapshotChunk[] } {
  let offset = 0
  const chunks = parts.map((part) => {
    const chunk = { offset, length: part.length, digest: createHash('sha256').update(part).digest('base64url') }
    offset += part.length
    return chunk
  })
  return { buf: Buffer.concat(parts), chunks }
}

// A Redis of this file's own: what a write sends is read off its `total_net_input_bytes`.
describe('a snapshot in Redis, stored by chunk', () => {
  let server: RedisServer
  let admin: Redis
  let client: Redis
  let prefix = ''
  let run = 0
  const logger = recordingLogger()
  const targets: SnapshotTarget[] = []

  beforeAll(async () => {
    server = await startRedis()
    admin = new Redis(server.url)
    client = new Redis(server.url)
  })

  afterAll(async () => {
    admin?.disconnect()
    client?.disconnect()
    await server?.stop()
  })

  /** A target (an instance) on a prefix of the test's own. */
  function target(sharedPrefix = `chunks-${run++}:`): SnapshotTarget {
    prefix = sharedPrefix
    const made = createRedisSnapshotTarget({ client, prefix, timeoutMs: 5000, logger })
    targets.push(made)
    return made
  }

  const chunkKey = (digest: string) => `${prefix}snapshot:chunk:${digest}`
  const inputBytes = async () => Number(/total_net_input_bytes:(\d+)/.exec(await admin.info('stats'))![1])

  it('a whole save that shares all chunks but one sends the manifest and that chunk, and reads back exactly', async () => {
    const writer = target()
    const parts = Array.from({ length: CHUNKS }, () => randomBytes(CHUNK_BYTES))
    const a = chunked(parts)
    await writer.write(a.buf, a.chunks)
    expect((await writer.read())?.equals(a.buf)).toBe(true)

    const changed = [...parts]
    changed[7] = randomBytes(CHUNK_BYTES + 100)
    const b = chunked(changed)
    const before = await inputBytes()
    const report = await writer.write(b.buf, b.chunks)
    const sent = (await inputBytes()) - before
    const manifest = encodeManifest({ totalLength: b.buf.length, chunks: b.chunks }).length
    expect(report).toEqual({ sentBytes: manifest + CHUNK_BYTES + 100, sentChunks: 1 })
    // What Redis received, commands and all (the INFO asked for in between included).
    expect(sent).toBeLessThan(manifest + 2 * CHUNK_BYTES)
    expect(sent).toBeGreaterThan(manifest + CHUNK_BYTES)
    expect((await writer.read())?.equals(b.buf)).toBe(true)

    // The chunk only A named expires after the grace; A's manifest can still be read meanwhile.
    const dropped = a.chunks[7]!.digest
    const ttl = await admin.pttl(chunkKey(dropped))
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(CHUNK_GRACE_MS)
    for (const chunk of b.chunks) expect(await admin.pttl(chunkKey(chunk.digest))).toBe(-1)
    const old = await admin.mgetBuffer(a.chunks.map((chunk) => chunkKey(chunk.digest)))
    expect(Buffer.concat(old as Buffer[]).equals(a.buf)).toBe(true)
  })

  it('a chunk gone missing is read as nothing stored, never a partial buffer; the next save stores it again', async () => {
    const writer = target()
    const a = chunked(Array.from({ length: CHUNKS }, () => randomBytes(1024)))
    await writer.write(a.buf, a.chunks)
    await admin.del(chunkKey(a.chunks[3]!.digest))
    logger.lines.length = 0
    expect(await writer.read()).toBeUndefined()
    expect(logger.lines).toEqual(['warn snapshot: a chunk in Redis is missing; read as nothing stored'])

    // Another instance, which did not write the manifest at the key, asks about every chunk.
    const other = target(prefix)
    await other.write(a.buf, a.chunks)
    expect((await other.read())?.equals(a.buf)).toBe(true)
  })

  it('a chunk lost behind the writer\'s back is stored again once the writer stops trusting its own manifest', async () => {
    let clock = 0
    prefix = `chunks-${run++}:`
    const writer = createRedisSnapshotTarget({ client, prefix, timeoutMs: 5000, logger, now: () => clock })
    const parts = Array.from({ length: 6 }, () => randomBytes(1024))
    const a = chunked(parts)
    await writer.write(a.buf, a.chunks)
    // Evicted, say: the writer, which stored it, does not ask about it again within TRUST_MS.
    await admin.del(chunkKey(a.chunks[2]!.digest))
    const b = chunked([randomBytes(1024), ...parts.slice(1)])
    clock = TRUST_MS - 1
    expect(await writer.write(b.buf, b.chunks)).toMatchObject({ sentChunks: 1 })
    expect(await writer.read()).toBeUndefined()
    clock = TRUST_MS
    const c = chunked([randomBytes(1024), ...parts.slice(1)])
    expect(await writer.write(c.buf, c.chunks)).toMatchObject({ sentChunks: 2 })
    expect((await writer.read())?.equals(c.buf)).toBe(true)
  })

  it('a chunk that does not match its digest is read as nothing stored', async () => {
    const writer = target()
    const a = chunked(Array.from({ length: 4 }, () => randomBytes(1024)))
    await writer.write(a.buf, a.chunks)
    await admin.set(chunkKey(a.chunks[1]!.digest), randomBytes(1024))
    logger.lines.length = 0
    expect(await writer.read()).toBeUndefined()
    expect(logger.lines).toEqual(['warn snapshot: a chunk in Redis does not match its digest; read as nothing stored'])
  })

  it('reads a whole buffer stored by an earlier build as it is, and a save by chunk replaces it', async () => {
    const writer = target()
    const legacy = Buffer.concat([Buffer.from('CMSSHLD', 'latin1'), randomBytes(300_000)])
    await admin.set(`${prefix}snapshot`, legacy)
    expect((await writer.read())?.equals(legacy)).toBe(true)
    const a = chunked(Array.from({ length: 4 }, () => randomBytes(1024)))
    const before = await inputBytes()
    await writer.write(a.buf, a.chunks)
    // Replacing it read its first bytes only, and sent a few KB.
    expect((await inputBytes()) - before).toBeLessThan(8 * 1024)
    expect((await writer.read())?.equals(a.buf)).toBe(true)
  })

  it('a save without chunks stores the buffer whole and lets the manifest\'s chunks expire', async () => {
    const writer = target()
    const a = chunked(Array.from({ length: 4 }, () => randomBytes(1024)))
    await writer.write(a.buf, a.chunks)
    await admin.rpush(`${prefix}snapshot:patches`, 'a patch')
    const whole = randomBytes(10_000)
    await writer.write(whole)
    expect((await writer.read())?.equals(whole)).toBe(true)
    expect(await admin.exists(`${prefix}snapshot:patches`)).toBe(0)
    for (const chunk of a.chunks) {
      const ttl = await admin.pttl(chunkKey(chunk.digest))
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(CHUNK_GRACE_MS)
    }
    // And back to chunks: the expiring ones are stored again, and persist.
    await writer.write(a.buf, a.chunks)
    for (const chunk of a.chunks) expect(await admin.pttl(chunkKey(chunk.digest))).toBe(-1)
    expect((await writer.read())?.equals(a.buf)).toBe(true)
  })

  it('a write that fails before storing its manifest throws, leaves the previous snapshot and chunks that expire', async () => {
    const writer = target()
    const a = chunked(Array.from({ length: 4 }, () => randomBytes(1024)))
    await writer.write(a.buf, a.chunks)
    // The same connection, but SET of the manifest fails (as a write would when Redis goes away then).
    const failing = new Proxy(client, {
      get: (real, property) => (property === 'set' ? () => Promise.reject(new Error('connection lost')) : Reflect.get(real, property)),
    })
    const dying = createRedisSnapshotTarget({ client: failing, prefix, timeoutMs: 5000, logger })
    const b = chunked([randomBytes(1024), ...a.chunks.slice(1).map((chunk) => a.buf.subarray(chunk.offset, chunk.offset + chunk.length))])
    await expect(dying.write(b.buf, b.chunks)).rejects.toThrow('connection lost')
    const pending = await admin.pttl(chunkKey(b.chunks[0]!.digest))
    expect(pending).toBeGreaterThan(CHUNK_GRACE_MS)
    expect(pending).toBeLessThanOrEqual(PENDING_CHUNK_MS)
    expect((await writer.read())?.equals(a.buf)).toBe(true)
  })
})

describe('whole saves through the shared tier, by chunk', () => {
  let tier: SharedTier
  let prefix: string

  beforeAll(async () => {
    prefix = `snapshot-chunks-${process.pid}-${Date.now()}:`
    const config = loadConfig({ UPSTREAM_URL: ORIGIN.upstreamUrl, BASE_URL: ORIGIN.baseUrl, REDIS_URL: await sharedRedisUrl(), REDIS_PREFIX: prefix })
    tier = createSharedTier(config, { info: () => undefined, warn: () => undefined }, Date.now)!
    expect(await tier.waitUntilUp(5_000)).toBe(true)
  })

  afterAll(async () => {
    if (tier === undefined) return
    const keys = await tier.client.keys(`${prefix}*`)
    if (keys.length > 0) await tier.client.unlink(...keys)
    await tier.close()
  })

  /** 3,000 pages of ~2 KB details: a few dozen groups. */
  function site(version: number, edited?: number): Snapshot {
    const pages: SyncedPage[] = [{ id: 1, parentId: null, type: 'home.HomePage', title: 'Home', slug: 'home', showInMenus: false, seoTitle: '', searchDescription: '', listItem: '{}', detail: '{}' }]
    for (let id = 2; id <= 3000; id++) {
      const title = id === edited ? `Post ${id} (edited)` : `Post ${id}`
      const body = createHash('sha256').update(String(id)).digest('hex').repeat(30)
      pages.push({ id, parentId: 1, type: 'blog.BlogPage', title, slug: `post-${id}`, showInMenus: false, seoTitle: '', searchDescription: '', listItem: `{"id": ${id}, "title": "${title}"}`, detail: `{"id": ${id}, "title": "${title}", "body": "${body}"}` })
    }
    return buildSnapshot(pages, { version, syncedAt: version, dialect: DEFAULT_DIALECT })
  }

  it('a whole save after a one-page edit sends Redis a small part of the snapshot, and a new instance loads it', async () => {
    const lines: Array<{ message: string; details: Record<string, unknown> }> = []
    const logger = { info: (details: object, message: string) => void lines.push({ message, details: details as Record<string, unknown> }), warn: () => undefined }
    const leader = createSnapshotPersistence({ targets: [tier.snapshotTarget], ...ORIGIN, logger, saveShare: 1, patchesPerFull: 0 })
    await leader.save(site(1))
    const edited = site(2, 1500)
    await leader.save(edited)
    const [first, second] = lines.filter((line) => line.message === 'snapshot: saved').map((line) => line.details)
    const sent = (details: Record<string, unknown> | undefined) => (details!['sent'] as Record<string, { sentBytes: number; sentChunks: number }>)[tier.snapshotTarget.name]!
    expect(sent(first).sentBytes).toBeGreaterThan(first!['bytes'] as number)
    expect(second!['groups']).toBeGreaterThan(10)
    expect(second!['reusedGroups']).toBe((second!['groups'] as number) - 1)
    expect(sent(second).sentChunks).toBeLessThanOrEqual(5)
    expect(sent(second).sentBytes).toBeLessThan((second!['bytes'] as number) / 5)

    const starting = createSnapshotPersistence({ targets: [tier.snapshotTarget], ...ORIGIN, logger: { info: () => undefined, warn: () => undefined } })
    const loaded = await starting.loadNewest()
    expect(loaded?.snapshot.fingerprint).toBe(edited.fingerprint)
  })
})
