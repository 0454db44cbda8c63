import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildSnapshot, type SyncedPage } from '../tree/build-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'
import { decodeSnapshot, encodeSnapshot, encodeSnapshotOf, pagesOfSnapshot } from '../../test/helpers/snapshot-bytes.js'
import { createSnapshotEncoder, type SnapshotChunk } from './snapshot-encoder.js'
import { createSnapshotFile } from './snapshot-file.js'
import { createSnapshotPersistence, type SnapshotTarget } from './snapshot-persistence.js'

const ORIGIN = { upstreamUrl: 'https://cms.example.com', baseUrl: 'https://api.example.com' }

function snapshotAt(syncedAt: number, version: number, title = 'Home'): Snapshot {
  const pages: SyncedPage[] = [
    { id: 1, parentId: null, type: 'home.HomePage', title, slug: 'home', showInMenus: false, seoTitle: '', searchDescription: '', listItem: `{"title": "${title}"}`, detail: `{"v": ${version}}` },
    { id: 2, parentId: 1, type: 'blog.BlogPage', title: 'Blog', slug: 'blog', showInMenus: true, seoTitle: '', searchDescription: '', listItem: '{}', detail: '{"n": 1e400}' },
  ]
  return buildSnapshot(pages, { version, syncedAt, dialect: { limitMax: null, emptyTypeIgnored: true, findKeepsQuery: true, nulInTextFilter: 'refused', notAcceptableText: 'Could not satisfy the request Accept header.' } })
}

function recordingLogger() {
  const lines: Array<{ level: 'info' | 'warn'; details: Record<string, unknown>; message: string }> = []
  return {
    lines,
    messages: (level: 'info' | 'warn') => lines.filter((l) => l.level === level).map((l) => l.message),
    info: (details: object, message: string) => void lines.push({ level: 'info', details: details as Record<string, unknown>, message }),
    warn: (details: object, message: string) => void lines.push({ level: 'warn', details: details as Record<string, unknown>, message }),
  }
}

function memoryTarget(name: string, initial?: Buffer) {
  const writes: Buffer[] = []
  let stored = initial
  const target: SnapshotTarget = {
    name,
    read: async () => stored,
    write: async (buf) => {
      writes.push(buf)
      stored = buf
    },
  }
  return { target, writes }
}

/** A target whose writes (the versions they hold) finish only when `release` is called. */
function slowTarget() {
  const writes: number[] = []
  let finish: () => void = () => undefined
  const target: SnapshotTarget = {
    name: 'slow',
    read: async () => undefined,
    write: (buf) => {
      writes.push(decodeSnapshot(buf)!.version)
      return new Promise<void>((resolve) => {
        finish = resolve
      })
    },
  }
  return { target, writes, release: () => finish() }
}

describe('save', () => {
  it('encodes once and writes the same bytes to every target', async () => {
    const a = memoryTarget('a')
    const b = memoryTarget('b')
    const logger = recordingLogger()
    const persistence = createSnapshotPersistence({ targets: [a.target, b.target], ...ORIGIN, logger })
    const snapshot = snapshotAt(1000, 4)
    await persistence.save(snapshot)
    expect(a.writes).toHaveLength(1)
    expect(b.writes[0]).toBe(a.writes[0])
    const decoded = decodeSnapshot(a.writes[0]!)
    expect(decoded).toMatchObject({ ...ORIGIN, version: 4, syncedAt: 1000, fingerprint: snapshot.fingerprint })
    expect(decoded?.pages).toEqual(pagesOfSnapshot(snapshot))
    expect(logger.messages('info')).toEqual(['snapshot: saved'])
  })

  it('a whole save compresses only the groups that changed since the last one, and logs how many it reused', async () => {
    const pages: SyncedPage[] = [{ id: 1, parentId: null, type: 'home.HomePage', title: 'Home', slug: 'home', showInMenus: false, seoTitle: '', searchDescription: '', listItem: '{}', detail: '{}' }]
    for (let id = 2; id <= 200; id++) {
      pages.push({ id, parentId: 1, type: 'blog.BlogPage', title: `Post ${id}`, slug: `post-${id}`, showInMenus: false, seoTitle: '', searchDescription: '', listItem: `{"id": ${id}}`, detail: `{"id": ${id}, "body": "${'words '.repeat(50)}"}` })
    }
    const dialect = snapshotAt(1, 1).dialect
    const first = buildSnapshot(pages, { version: 1, syncedAt: 1, dialect })
    const second = buildSnapshot(pages.map((p) => (p.id === 100 ? { ...p, title: 'Edited', listItem: '{"id": 100, "edited": true}' } : p)), { version: 2, syncedAt: 2, dialect })
    const file = memoryTarget('file')
    const logger = recordingLogger()
    const encoder = createSnapshotEncoder({ groupRule: { minBytes: 2000, oneIn: 4, maxBytes: 16_000 } })
    const persistence = createSnapshotPersistence({ targets: [file.target], ...ORIGIN, logger, encoder, saveShare: 1 })
    await persistence.save(first)
    await persistence.save(second)
    const saved = logger.lines.filter((line) => line.message === 'snapshot: saved').map((line) => line.details)
    expect(saved).toHaveLength(2)
    expect(saved[0]).toMatchObject({ reusedGroups: 0, groups: expect.any(Number) })
    expect(saved[0]!['groups']).toBeGreaterThan(10)
    expect(saved[1]).toMatchObject({ groups: saved[0]!['groups'], reusedGroups: (saved[0]!['groups'] as number) - 1 })
    expect(decodeSnapshot(file.writes[1]!)?.pages).toEqual(pagesOfSnapshot(second))
  })

  it('hands each target the encoding\'s chunks, and logs what a target says it sent', async () => {
    const seen: Array<readonly SnapshotChunk[] | undefined> = []
    const chunked: SnapshotTarget = {
      name: 'chunked',
      read: async () => undefined,
      write: async (buf, chunks) => {
        seen.push(chunks)
        return { sentBytes: buf.length, sentChunks: chunks?.length ?? 0 }
      },
    }
    const plain = memoryTarget('plain')
    const logger = recordingLogger()
    const persistence = createSnapshotPersistence({ targets: [chunked, plain.target], ...ORIGIN, logger })
    await persistence.save(snapshotAt(1, 1))
    const chunks = seen[0]!
    expect(chunks.reduce((at, chunk) => (expect(chunk.offset).toBe(at), at + chunk.length), 0)).toBe(plain.writes[0]!.length)
    const saved = logger.lines.find((line) => line.message === 'snapshot: saved')!.details
    expect(saved['sent']).toEqual({ chunked: { sentBytes: plain.writes[0]!.length, sentChunks: chunks.length } })
  })

  it('a target whose write throws is logged; the others are still written and save resolves', async () => {
    const good = memoryTarget('good')
    const bad: SnapshotTarget = { name: 'bad', read: async () => undefined, write: async () => Promise.reject(new Error('disk on fire')) }
    const logger = recordingLogger()
    const persistence = createSnapshotPersistence({ targets: [bad, good.target], ...ORIGIN, logger })
    await expect(persistence.save(snapshotAt(1, 1))).resolves.toMatchObject({ version: 1 })
    expect(good.writes).toHaveLength(1)
    expect(logger.lines.find((l) => l.level === 'warn')).toMatchObject({ message: 'snapshot: write failed', details: { target: 'bad' } })
  })

  it('does not overlap saves; of several waiting only the newest is written', async () => {
    const { target: slow, writes, release } = slowTarget()
    // The whole time may go to saving here: this test is about order, not pace (see the next one).
    const persistence = createSnapshotPersistence({ targets: [slow], ...ORIGIN, logger: recordingLogger(), saveShare: 1 })
    const first = persistence.save(snapshotAt(1, 1))
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(writes).toEqual([1])
    void persistence.save(snapshotAt(2, 2))
    const last = persistence.save(snapshotAt(3, 3))
    release()
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(writes).toEqual([1, 3])
    release()
    await Promise.all([first, last])
    // Idle again: the next save starts at once.
    const next = persistence.save(snapshotAt(4, 4))
    await new Promise((resolve) => setTimeout(resolve, 50))
    release()
    await next
    expect(writes).toEqual([1, 3, 4])
  })

  it('holds back a save that follows another, so that saving takes at most its share of the time; a lone save is never held', async () => {
    let clock = 0
    const { target: slow, writes, release } = slowTarget()
    const slept: number[] = []
    const logger = recordingLogger()
    const persistence = createSnapshotPersistence({
      targets: [slow], ...ORIGIN, logger, saveShare: 0.25, now: () => clock,
      sleep: async (ms) => {
        slept.push(ms)
        clock += ms
      },
    })
    const tick = () => new Promise((resolve) => setTimeout(resolve, 20))
    const first = persistence.save(snapshotAt(1, 1))
    await tick()
    const second = persistence.save(snapshotAt(2, 2))
    clock += 100 // the first save took 100 ms
    release()
    await tick()
    // A quarter of the time: 100 ms saving, then 300 ms held before the next one starts.
    expect(slept).toEqual([300])
    expect(writes).toEqual([1, 2])
    release()
    await Promise.all([first, second])
    expect(logger.lines.filter((line) => line.message === 'snapshot: saved').map((line) => line.details['heldMs'])).toEqual([undefined, 300])
    // Idle again: a lone save starts at once and nothing waits after it.
    const lone = persistence.save(snapshotAt(3, 3))
    await tick()
    release()
    await lone
    expect(writes).toEqual([1, 2, 3])
    expect(slept).toEqual([300])
  })

  it('refuses a share of the time outside (0, 1]', () => {
    for (const saveShare of [0, -0.5, 1.5, Number.NaN]) {
      expect(() => createSnapshotPersistence({ targets: [], ...ORIGIN, logger: recordingLogger(), saveShare })).toThrow(RangeError)
    }
  })
})

describe('loadNewest', () => {
  it('loads the newest of two targets and says where from', async () => {
    const older = snapshotAt(1000, 8, 'Old')
    const newer = snapshotAt(2000, 3, 'New')
    const logger = recordingLogger()
    const persistence = createSnapshotPersistence({
      targets: [memoryTarget('file', encodeSnapshotOf(older, ORIGIN)).target, memoryTarget('redis', encodeSnapshotOf(newer, ORIGIN)).target],
      ...ORIGIN,
      logger,
    })
    const loaded = await persistence.loadNewest()
    expect(loaded?.source).toBe('redis')
    expect(loaded?.snapshot.fingerprint).toBe(newer.fingerprint)
    expect(loaded?.snapshot.version).toBe(3)
    expect(loaded?.snapshot.syncedAt).toBe(2000)
    expect(loaded?.snapshot.pages.at(0)?.title).toBe('New')
    expect(logger.lines.find((l) => l.message === 'snapshot: skipped, not newer than the one loaded')?.details).toMatchObject({ target: 'file', loadedFrom: 'redis' })
    expect(logger.messages('info')).toContain('snapshot: loaded')
  })

  it('skips a target whose read throws, returns garbage, or hangs', async () => {
    const good = snapshotAt(500, 1)
    const logger = recordingLogger()
    const persistence = createSnapshotPersistence({
      targets: [
        { name: 'throws', read: () => Promise.reject(new Error('ECONNREFUSED')), write: async () => undefined },
        memoryTarget('garbage', Buffer.from('not a snapshot at all')).target,
        memoryTarget('corrupt', (() => {
          const buf = encodeSnapshotOf(snapshotAt(9000, 9), ORIGIN)
          buf[buf.length - 3] = buf[buf.length - 3]! ^ 1
          return buf
        })()).target,
        { name: 'hangs', read: () => new Promise<Buffer>(() => undefined), write: async () => undefined },
        memoryTarget('empty').target,
        memoryTarget('good', encodeSnapshotOf(good, ORIGIN)).target,
      ],
      ...ORIGIN,
      logger,
      readTimeoutMs: 50,
    })
    const loaded = await persistence.loadNewest()
    expect(loaded?.source).toBe('good')
    expect(loaded?.snapshot.fingerprint).toBe(good.fingerprint)
    const skipped = Object.fromEntries(logger.lines.filter((l) => l.level === 'warn').map((l) => [l.details.target, l.message]))
    expect(skipped).toEqual({
      throws: 'snapshot: skipped, the read failed',
      garbage: 'snapshot: skipped, not a cms-shield snapshot (no CMSSHLD magic)',
      corrupt: 'snapshot: skipped, snapshot checksum mismatch (corrupted or truncated)',
      hangs: 'snapshot: skipped, the read timed out',
    })
    expect(logger.lines.find((l) => l.details.target === 'empty')?.message).toBe('snapshot: none stored')
  })

  it('never loads a snapshot synced from another UPSTREAM_URL, however new; one made for another BASE_URL is loaded onto this one', async () => {
    const logger = recordingLogger()
    const mine = snapshotAt(100, 1)
    const persistence = createSnapshotPersistence({
      targets: [
        memoryTarget('other-cms', encodeSnapshotOf(snapshotAt(9000, 1), { ...ORIGIN, upstreamUrl: 'https://staging-cms.example.com' })).target,
        memoryTarget('other-base', encodeSnapshotOf(snapshotAt(9000, 1), { ...ORIGIN, baseUrl: 'https://staging-api.example.com' })).target,
        memoryTarget('mine', encodeSnapshotOf(mine, ORIGIN)).target,
      ],
      ...ORIGIN,
      logger,
    })
    const loaded = await persistence.loadNewest()
    expect(loaded?.source).toBe('other-base')
    expect(loaded?.snapshot.syncedAt).toBe(9000)
    for (const page of loaded!.snapshot.pages) expect(page.detail.toString('utf8')).not.toContain('staging-api.example.com')
    const reasons = logger.lines.filter((l) => l.level === 'warn').map((l) => [l.details.target, l.details.reason])
    expect(reasons).toEqual([
      ['other-cms', 'snapshot was synced from UPSTREAM_URL https://staging-cms.example.com, not https://cms.example.com'],
    ])
  })

  it('falls back to an older snapshot when the newest cannot be rebuilt to its fingerprint', async () => {
    const older = snapshotAt(100, 1)
    const newer = snapshotAt(200, 2)
    const forged = encodeSnapshot({ ...ORIGIN, pages: pagesOfSnapshot(newer), dialect: newer.dialect, syncedAt: 200, version: 2, fingerprint: 'not-the-fingerprint' })
    const logger = recordingLogger()
    const persistence = createSnapshotPersistence({
      targets: [memoryTarget('forged', forged).target, memoryTarget('older', encodeSnapshotOf(older, ORIGIN)).target],
      ...ORIGIN,
      logger,
    })
    const loaded = await persistence.loadNewest()
    expect(loaded?.source).toBe('older')
    expect(logger.lines.find((l) => l.details.target === 'forged')?.message).toMatch(/^snapshot: skipped, rebuilt fingerprint .* is not the stored not-the-fingerprint$/)
  })

  it('is undefined when nothing usable is stored', async () => {
    const persistence = createSnapshotPersistence({ targets: [memoryTarget('empty').target], ...ORIGIN, logger: recordingLogger() })
    expect(await persistence.loadNewest()).toBeUndefined()
    expect(await createSnapshotPersistence({ targets: [], ...ORIGIN, logger: recordingLogger() }).loadNewest()).toBeUndefined()
  })

  it('a restarted instance loads what the previous one saved to its file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cms-shield-persistence-'))
    try {
      const path = join(dir, 'snapshot.bin')
      const before = createSnapshotPersistence({ targets: [createSnapshotFile({ path, logger: recordingLogger() })], ...ORIGIN, logger: recordingLogger() })
      const snapshot = snapshotAt(1234, 17)
      await before.save(snapshot)
      const after = createSnapshotPersistence({ targets: [createSnapshotFile({ path, logger: recordingLogger() })], ...ORIGIN, logger: recordingLogger() })
      const loaded = await after.loadNewest()
      expect(loaded?.source).toBe(`file:${path}`)
      expect(loaded?.snapshot.fingerprint).toBe(snapshot.fingerprint)
      expect(loaded?.snapshot.version).toBe(17)
      expect(loaded?.snapshot.pages.slice().map((p) => p.detail.toString())).toEqual(snapshot.pages.slice().map((p) => p.detail.toString()))
      const elsewhere = createSnapshotPersistence({
        targets: [createSnapshotFile({ path, logger: recordingLogger() })], ...ORIGIN, upstreamUrl: 'https://other.example.com', logger: recordingLogger(),
      })
      expect(await elsewhere.loadNewest()).toBeUndefined()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

/** A target keeping a patch log in memory, as the Redis one does (a full write empties it). */
function loggingTarget(name: string) {
  let full: Buffer | undefined
  const patches: Buffer[] = []
  const counts = { full: 0, patches: 0 }
  const target: SnapshotTarget = {
    name,
    read: async () => full,
    write: async (buf) => {
      counts.full++
      full = buf
      patches.length = 0
    },
    patches: {
      append: async (buf, position) => {
        counts.patches++
        patches.push(buf)
        return patches.length === position + 1
      },
      read: async (position) => patches.slice(position),
    },
  }
  return { target, counts, patches }
}

describe('changes stored as patches', () => {
  it('stores every change after a full snapshot as a patch, the whole snapshot again once SNAPSHOT_PATCHES_PER_FULL of them are told, and loads the chain', async () => {
    const { target, counts, patches } = loggingTarget('memory')
    const persistence = createSnapshotPersistence({ ...ORIGIN, targets: [target], logger: recordingLogger(), patchesPerFull: 3, now: () => 0 })
    const saved = []
    for (let version = 1; version <= 3; version++) saved.push(await persistence.save(snapshotAt(version, version, `Home ${version}`)))
    expect(counts).toEqual({ full: 1, patches: 2 })
    expect(saved.map((s) => s?.patch?.index)).toEqual([undefined, 0, 1])
    expect(saved[1]!.patch!.from).toBe(saved[0]!.fingerprint)
    const restarted = createSnapshotPersistence({ ...ORIGIN, targets: [target], logger: recordingLogger() })
    const loaded = await restarted.loadNewest()
    expect(loaded?.snapshot.fingerprint).toBe(saved[2]!.fingerprint)
    expect(loaded?.snapshot.byId.get(1)?.title).toBe('Home 3')
    // The third patch is told (and announced) first; then the same snapshot is written whole.
    const third = await persistence.save(snapshotAt(4, 4, 'Home 4'))
    expect(third?.patch?.index).toBe(2)
    for (let i = 0; i < 100 && counts.full < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(counts).toEqual({ full: 2, patches: 3 })
    expect(patches).toHaveLength(0)
    expect((await restarted.loadNewest())?.snapshot.fingerprint).toBe(third!.fingerprint)
    expect((await persistence.save(snapshotAt(5, 5, 'Home 5')))?.patch?.index).toBe(0)
  })

  it('does not hold the change that arrives during the whole save compacting the log for that save\'s time', async () => {
    let clock = 0
    const { target, counts } = loggingTarget('memory')
    // Whole writes take 500 ms on this clock; patches take none.
    const write = target.write
    let releaseWhole: () => void = () => undefined
    const slowWhole: SnapshotTarget = {
      ...target,
      write: async (buf) => {
        await new Promise<void>((resolve) => {
          releaseWhole = () => {
            clock += 500
            resolve()
          }
        })
        await write(buf)
      },
    }
    const slept: number[] = []
    const persistence = createSnapshotPersistence({
      ...ORIGIN, targets: [slowWhole], logger: recordingLogger(), patchesPerFull: 1, saveShare: 0.2, now: () => clock,
      sleep: async (ms) => {
        slept.push(ms)
        clock += ms
      },
    })
    const tick = () => new Promise((resolve) => setTimeout(resolve, 20))
    const first = persistence.save(snapshotAt(1, 1, 'Home 1'))
    await tick()
    releaseWhole()
    await first
    // The first change is a patch, told at once; then the log is compacted by a whole save (500 ms).
    expect((await persistence.save(snapshotAt(2, 2, 'Home 2')))?.patch?.index).toBe(0)
    await tick()
    const during = persistence.save(snapshotAt(3, 3, 'Home 3'))
    releaseWhole()
    expect((await during)?.patch?.index).toBe(0)
    // Held for the patch's own (zero) time, not four times the compaction's 500 ms.
    expect(slept.every((ms) => ms < 500)).toBe(true)
    expect(counts).toEqual({ full: 2, patches: 2 })
  })

  it('stores the whole snapshot again once SNAPSHOT_FULL_INTERVAL has passed since the last full one, and when asked to', async () => {
    const { target, counts } = loggingTarget('memory')
    let clock = 0
    const persistence = createSnapshotPersistence({ ...ORIGIN, targets: [target], logger: recordingLogger(), fullIntervalMs: 1000, now: () => clock })
    await persistence.save(snapshotAt(1, 1, 'a'))
    clock = 999
    await persistence.save(snapshotAt(2, 2, 'b'))
    expect(counts).toEqual({ full: 1, patches: 1 })
    clock = 1000
    await persistence.save(snapshotAt(3, 3, 'c'))
    for (let i = 0; i < 100 && counts.full < 2; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(counts).toEqual({ full: 2, patches: 2 })
    await persistence.save(snapshotAt(4, 4, 'd'), { full: true })
    expect(counts).toEqual({ full: 3, patches: 2 })
  })

  it('stores the whole snapshot next when a patch did not land where expected (the log changed under it)', async () => {
    const { target, counts, patches } = loggingTarget('memory')
    const persistence = createSnapshotPersistence({ ...ORIGIN, targets: [target], logger: recordingLogger() })
    await persistence.save(snapshotAt(1, 1, 'a'))
    patches.push(Buffer.from('another writer'))
    const saved = await persistence.save(snapshotAt(2, 2, 'b'))
    expect(saved?.patch).toBeUndefined()
    expect(counts).toEqual({ full: 2, patches: 1 })
  })

  it('appends patches to a sidecar of SNAPSHOT_FILE, removed when the whole file is written again, and starts from both', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cms-shield-patches-'))
    try {
      const path = join(dir, 'snapshot.bin')
      const file = () => createSnapshotFile({ path, logger: recordingLogger() })
      const persistence = createSnapshotPersistence({ ...ORIGIN, targets: [file()], logger: recordingLogger(), patchesPerFull: 2 })
      await persistence.save(snapshotAt(1, 1, 'a'))
      const second = await persistence.save(snapshotAt(2, 2, 'b'))
      expect(second?.patch?.index).toBe(0)
      expect(await file().patches!.read(0)).toHaveLength(1)
      const loaded = await createSnapshotPersistence({ ...ORIGIN, targets: [file()], logger: recordingLogger() }).loadNewest()
      expect(loaded?.snapshot.byId.get(1)?.title).toBe('b')
      await persistence.save(snapshotAt(3, 3, 'c'))
      // Two patches told; the whole file follows, and the sidecar goes.
      for (let i = 0; i < 200 && (await file().patches!.read(0)).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5))
      expect(await file().patches!.read(0)).toHaveLength(0)
      await persistence.save(snapshotAt(4, 4, 'd'))
      const again = await createSnapshotPersistence({ ...ORIGIN, targets: [file()], logger: recordingLogger() }).loadNewest()
      expect(again?.snapshot.byId.get(1)?.title).toBe('d')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
