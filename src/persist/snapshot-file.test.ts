import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createSnapshotFile } from './snapshot-file.js'

function recordingLogger() {
  const lines: Array<{ level: 'info' | 'warn'; details: object; message: string }> = []
  return {
    lines,
    info: (details: object, message: string) => void lines.push({ level: 'info', details, message }),
    warn: (details: object, message: string) => void lines.push({ level: 'warn', details, message }),
  }
}

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cms-shield-snapshot-file-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('createSnapshotFile', () => {
  it('reads undefined when nothing was written, then what was written', async () => {
    const file = createSnapshotFile({ path: join(dir, 'snapshot.bin'), logger: recordingLogger() })
    expect(file.name).toBe(`file:${join(dir, 'snapshot.bin')}`)
    expect(await file.read()).toBeUndefined()
    await file.write(Buffer.from('first'))
    expect((await file.read())?.toString()).toBe('first')
    await file.write(Buffer.from('second, longer'))
    expect((await file.read())?.toString()).toBe('second, longer')
    expect(await readdir(dir)).toEqual(['snapshot.bin'])
  })

  it('creates the directory it writes into', async () => {
    const path = join(dir, 'a', 'b', 'snapshot.bin')
    const file = createSnapshotFile({ path, logger: recordingLogger() })
    await file.write(Buffer.from('x'))
    expect((await readFile(path)).toString()).toBe('x')
  })

  it('never shows a partial file to a reader while writing', async () => {
    const path = join(dir, 'snapshot.bin')
    const file = createSnapshotFile({ path, logger: recordingLogger() })
    const size = 4 << 20
    const a = Buffer.alloc(size, 0xaa)
    const b = Buffer.alloc(size, 0xbb)
    await file.write(a)
    let writing = true
    const writer = (async () => {
      for (let round = 0; round < 6; round++) await file.write(round % 2 === 0 ? b : a)
      writing = false
    })()
    let reads = 0
    while (writing) {
      const seen = await readFile(path)
      expect(seen.length).toBe(size)
      expect(seen.equals(a) || seen.equals(b)).toBe(true)
      reads++
    }
    await writer
    expect(reads).toBeGreaterThan(0)
    expect((await readdir(dir)).filter((name) => name.includes('.tmp-'))).toEqual([])
  })

  it('writes issued together land in order: the last one wins', async () => {
    const file = createSnapshotFile({ path: join(dir, 'snapshot.bin'), logger: recordingLogger() })
    await Promise.all(Array.from({ length: 8 }, (_, i) => file.write(Buffer.from(`write ${i}`))))
    expect((await file.read())?.toString()).toBe('write 7')
    expect(await readdir(dir)).toEqual(['snapshot.bin'])
  })

  it('is not disturbed by a leftover temporary file, and removes it once stale', async () => {
    const path = join(dir, 'snapshot.bin')
    const leftover = `${path}.tmp-1-deadbeef`
    await writeFile(leftover, 'half a snap')
    const logger = recordingLogger()
    const file = createSnapshotFile({ path, logger })
    expect(await file.read()).toBeUndefined()
    await file.write(Buffer.from('whole'))
    expect((await file.read())?.toString()).toBe('whole')
    // Fresh: it may belong to another instance's write in progress, so it stays.
    expect((await readdir(dir)).sort()).toEqual(['snapshot.bin', 'snapshot.bin.tmp-1-deadbeef'])
    const hourAgo = new Date(Date.now() - 2 * 3_600_000)
    await utimes(leftover, hourAgo, hourAgo)
    await file.write(Buffer.from('again'))
    expect(await readdir(dir)).toEqual(['snapshot.bin'])
  })

  it('logs a failed write, never throws, and keeps the previous file', async () => {
    // The target path is a directory: the rename onto it fails.
    const path = join(dir, 'snapshot.bin')
    await mkdir(path)
    await writeFile(join(path, 'inside'), 'kept')
    const logger = recordingLogger()
    const file = createSnapshotFile({ path, logger })
    await expect(file.write(Buffer.from('new'))).resolves.toBeUndefined()
    expect(logger.lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      'snapshot file: write failed; the previous file (if any) is kept',
    ])
    expect((await readFile(join(path, 'inside'))).toString()).toBe('kept')
    expect(await readdir(dir)).toEqual(['snapshot.bin'])
    // A read that fails for another reason than a missing file throws, for the caller to log.
    await expect(file.read()).rejects.toThrow()
    // The same file keeps working once the obstacle is gone.
    await rm(path, { recursive: true })
    await file.write(Buffer.from('after'))
    expect((await file.read())?.toString()).toBe('after')
  })

  it('logs a write below a path that cannot be a directory', async () => {
    await writeFile(join(dir, 'plain'), 'x')
    const logger = recordingLogger()
    const file = createSnapshotFile({ path: join(dir, 'plain', 'snapshot.bin'), logger })
    await file.write(Buffer.from('new'))
    expect(logger.lines.map((l) => l.level)).toEqual(['warn'])
    expect((await readdir(dir)).sort()).toEqual(['plain'])
  })
})
