/**
 * Gives V8's heap back after the start's full sync (docs/performance.md, "memory at 100,000
 * pages"). A full sync promotes the garbage of thousands of requests and parsed windows into the
 * old generation; when it ends, nothing makes V8 collect again, so the fragmented old-space pages
 * and the grown young generation stay committed (a third of the heap at 100,000 pages) until
 * allocation resumes. V8's memory-reducing collection — compacting, and shrinking the young
 * generation — is reachable without `--expose-gc` through the inspector protocol's
 * `HeapProfiler.collectGarbage`, in process, with no port opened and nothing exposed to requests.
 * @module
 */
import { Session } from 'node:inspector'

/**
 * Ends when the collection has run (it runs in a task of its own, after this call returns), with
 * whether it did collect: `false` when this node has no inspector (built without it), when the
 * protocol refused the command, or when an object no one held survived it. The inspector
 * protocol's commands are V8's, not Node's API: that last check is what tells a collection that
 * really ran from a command that a V8 release turned into something else.
 */
export function reclaimHeap(): Promise<boolean> {
  let session: Session
  try {
    session = new Session()
    session.connect()
  } catch {
    return Promise.resolve(false)
  }
  // Held weakly only: a full collection, which runs after this task, takes it.
  const unheld = new WeakRef({})
  return new Promise<boolean>((resolve) => {
    session.post('HeapProfiler.collectGarbage', (error) => {
      // Disconnecting inside the callback would wait for the callback to end: a dead lock.
      setImmediate(() => {
        session.disconnect()
        resolve(error === null && unheld.deref() === undefined)
      })
    })
  })
}

/** The public path: nothing compacts the heap; V8 gives it back as allocation resumes. */
export const skipReclaim = (): Promise<boolean> => Promise.resolve(false)

/**
 * The smallest tree after which the heap is compacted: at 100,000 pages it gives back a third of
 * the heap (docs/performance.md); at a few thousand, a few MiB, and the collection would only cost
 * its pause.
 */
export const RECLAIM_FROM_PAGES = 10_000

/**
 * How long after a loaded snapshot is swapped in the collection waits: a warm start reads the
 * snapshot before it listens, and collecting at once held its readiness back by the collection's
 * 150–250 ms at 100,000 pages (docs/performance.md); a little later it pauses the instance once,
 * as the collection after a warm-started leader's first full sync does.
 */
export const AFTER_LOAD_DELAY_MS = 5_000

export interface HeapReclaimerOptions {
  readonly logger: { info(details: object, message: string): void }
  /** Default {@link reclaimHeap}. */
  readonly reclaim?: () => Promise<boolean>
  /** Default {@link RECLAIM_FROM_PAGES}. */
  readonly fromPages?: number
  /** Runs `run` after `ms` without keeping the process alive; default an unref'd `setTimeout`. */
  readonly defer?: (run: () => void, ms: number) => void
}

const unrefTimeout = (run: () => void, ms: number): void => void setTimeout(run, ms).unref()

/**
 * Reclaims the heap once per process: after whichever comes first of the start's full sync and
 * the first whole snapshot loaded from a store or a peer (a follower never syncs), the moments
 * that leave the most garbage while few requests have been served.
 * @returns `after(pages, what, delayMs)`: call it when such a moment ends; `what` names it in the
 * log line; the collection runs `delayMs` later (0: at once).
 */
export function createHeapReclaimer(options: HeapReclaimerOptions): (pages: number, what: string, delayMs?: number) => void {
  const reclaim = options.reclaim ?? reclaimHeap
  const fromPages = options.fromPages ?? RECLAIM_FROM_PAGES
  const defer = options.defer ?? unrefTimeout
  let done = false
  const collect = (what: string) => {
    const before = process.memoryUsage()
    const started = performance.now()
    void reclaim().then((collected) => {
      const after = process.memoryUsage()
      const mib = (bytes: number) => Math.round(bytes / 2 ** 20)
      options.logger.info(
        { collected, ms: Math.round(performance.now() - started), rssMiB: [mib(before.rss), mib(after.rss)], heapTotalMiB: [mib(before.heapTotal), mib(after.heapTotal)] },
        collected ? `memory: heap compacted after ${what}` : `memory: heap not compacted after ${what} (no collection through the inspector)`,
      )
    })
  }
  return (pages, what, delayMs = 0) => {
    if (done || pages < fromPages) return
    done = true
    if (delayMs > 0) defer(() => collect(what), delayMs)
    else collect(what)
  }
}
