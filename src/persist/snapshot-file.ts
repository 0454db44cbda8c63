/**
 * A snapshot kept in one file, replaced atomically: a reader (this process after a restart, or
 * another instance on a shared volume) sees the old file or the new one, never a partial write.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises'
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
  // Writes from this process run one at a time, in order: the last one written is the last one asked for.
  let queue: Promise<void> = Promise.resolve()

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
  }
}
