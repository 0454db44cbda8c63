/**
 * A snapshot kept in one file, replaced atomically: a reader (this process after a restart, or
 * another instance on a shared volume) sees the old file or the new one, never a partial write.
 *
 * The patches stored after it (`snapshot-patch.ts`) are appended to a sidecar, `<path>.patches`,
 * each as a 4-byte big-endian length and the patch: an edit then costs one small append and one
 * fsync, where rewriting the file would cost encoding and writing the whole tree. Writing the full file removes the sidecar after the
 * rename; a crash between the two leaves patches whose base is the older snapshot, which a reader
 * ignores (`patch-chain.ts`), as it ignores a last record cut short by a crash.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { appendFile, mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { PersistLogger, SnapshotTarget } from './snapshot-persistence.js'

export interface SnapshotFileOptions {
  readonly path: string
  readonly logger: PersistLogger
  /** Temporary files of this file older than this are removed after a write (a crash's leftovers). Default 1 hour. */
  readonly staleTmpMs?: number
}

function errorCode(caught: unknown): string | undefined {
  return typeof caught === 'object' && caught !== null && 'code' in caught ? String((caught as { code: unknown }).code) : undefined
}

export function createSnapshotFile(options: SnapshotFileOptions): SnapshotTarget {
  const { path, logger } = options
  const staleTmpMs = options.staleTmpMs ?? 3_600_000
  const directory = dirname(path)
  const tmpPrefix = `${basename(path)}.tmp-`
  const patchesPath = `${path}.patches`
  // Writes from this process run one at a time, in order: the last one written is the last one asked for.
  let queue: Promise<void> = Promise.resolve()
  /** Patches this process appended since it last wrote the full file. */
  let appended = 0

  async function writeNow(buf: Buffer): Promise<void> {
    // The pid alone is not unique: containers sharing a volume all run as pid 1.
    const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
    const started = Date.now()
    try {
      await mkdir(directory, { recursive: true })
      const handle = await open(tmp, 'w')
      try {
        await handle.writeFile(buf)
        await handle.sync()
      } finally {
        await handle.close()
      }
      await rename(tmp, path)
    } catch (caught) {
      logger.warn({ err: caught, path }, 'snapshot file: write failed; the previous file (if any) is kept')
      await unlink(tmp).catch(() => undefined)
      return
    }
    await unlink(patchesPath).catch((caught: unknown) => {
      if (errorCode(caught) !== 'ENOENT') throw caught
    })
    appended = 0
    await syncDirectory()
    logger.info({ path, bytes: buf.length, durationMs: Date.now() - started }, 'snapshot file: written')
    await removeStaleTmpFiles()
  }

  /** Makes the rename itself durable; not every platform can open a directory, which is harmless. */
  async function syncDirectory(): Promise<void> {
    try {
      const handle = await open(directory, 'r')
      try {
        await handle.sync()
      } finally {
        await handle.close()
      }
    } catch {
      // Best effort.
    }
  }

  async function removeStaleTmpFiles(): Promise<void> {
    try {
      const now = Date.now()
      for (const name of await readdir(directory)) {
        if (!name.startsWith(tmpPrefix)) continue
        const file = join(directory, name)
        const info = await stat(file).catch(() => undefined)
        if (info && now - info.mtimeMs > staleTmpMs) await unlink(file).catch(() => undefined)
      }
    } catch {
      // Best effort.
    }
  }

  async function appendNow(buf: Buffer, position: number): Promise<boolean> {
    if (position !== appended) return false
    const length = Buffer.alloc(4)
    length.writeUInt32BE(buf.length)
    try {
      // One write of the whole record, so that appends of several processes never interleave within one.
      await appendFile(patchesPath, Buffer.concat([length, buf]), { flush: true })
    } catch (caught) {
      logger.warn({ err: caught, path: patchesPath }, 'snapshot file: appending a patch failed')
      return false
    }
    appended++
    return true
  }

  async function readPatches(): Promise<Buffer[]> {
    let bytes: Buffer
    try {
      bytes = await readFile(patchesPath)
    } catch (caught) {
      if (errorCode(caught) === 'ENOENT') return []
      throw caught
    }
    const patches: Buffer[] = []
    for (let at = 0; at + 4 <= bytes.length;) {
      const end = at + 4 + bytes.readUInt32BE(at)
      if (end > bytes.length) break
      patches.push(bytes.subarray(at + 4, end))
      at = end
    }
    return patches
  }

  return {
    name: `file:${path}`,
    async read() {
      try {
        return await readFile(path)
      } catch (caught) {
        if (errorCode(caught) === 'ENOENT') return undefined
        throw caught
      }
    },
    write(buf) {
      const done = queue.then(() => writeNow(buf)).catch((caught: unknown) => {
        logger.warn({ err: caught, path }, 'snapshot file: write failed')
      })
      queue = done
      return done
    },
    patches: {
      append(buf, position) {
        const done = queue.then(() => appendNow(buf, position))
        queue = done.then(() => undefined, () => undefined)
        return done
      },
      read: async (position) => (await readPatches()).slice(position),
    },
  }
}
