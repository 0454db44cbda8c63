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
 * `false` when this node has no inspector (built without it): nothing is collected then.
 */
export function reclaimHeap(): Promise<boolean> {
  let session: Session
  try {
    session = new Session()
    session.connect()
  } catch {
    return Promise.resolve(false)
  }
  return new Promise<boolean>((resolve) => {
    session.post('HeapProfiler.collectGarbage', (error) => {
      // Disconnecting inside the callback would wait for the callback to end: a dead lock.
      setImmediate(() => {
        session.disconnect()
        resolve(error === null)
      })
    })
  })
}
