/**
 * The one way a sync runs reads side by side: at most `concurrency` (SYNC_CONCURRENCY) in flight,
 * so the CMS's load from a sync is the operator's number whatever the sync is made of.
 * @module
 */
import { createError } from '../errors.js'

/**
 * Runs `work` over `items` with at most `concurrency` in flight and returns the results in the
 * items' order; the first failure stops the rest (work in flight finishes, none starts).
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  concurrency: number,
  signal: AbortSignal,
  work: (item: T, index: number) => Promise<R>,
  onDone?: (done: number) => void,
): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  let done = 0
  let failed = false
  const worker = async () => {
    while (!failed && next < items.length) {
      if (signal.aborted) throw createError('SYNC_ABORTED', 'the sync was cancelled')
      const index = next++
      try {
        results[index] = await work(items[index]!, index)
      } catch (error) {
        failed = true
        throw error
      }
      onDone?.(++done)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker))
  return results
}
