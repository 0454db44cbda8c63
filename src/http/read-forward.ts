/**
 * Reads a planned forward through the cache and the CMS, and maps what can go wrong to the answer
 * a client gets: the budget's refusals (429/503), a timeout (504), Wagtail's 4xx for a 500 the
 * query's input caused (`cms-blame.ts`), else a 502. Kept apart from planning, so that how a
 * forward's failure is told to the client changes in one place.
 * @module
 */
import { isProxyError, type ProxyError } from '../errors.js'
import { isOverBudget, type ReadThrough } from '../cache/read-through.js'
import type { Snapshot } from '../tree/snapshot.js'
import { errorAnswer, type HttpAnswer } from './answers.js'
import { cmsFailedOnInput } from './cms-blame.js'
import type { Forward, ForwardPlans } from './forward-plans.js'
import type { ReadThroughAnswers } from './read-through-answers.js'

export interface ForwardReadOptions {
  readonly readThrough: ReadThrough
  readonly answers: ReadThroughAnswers
  readonly plans: ForwardPlans
  /** The purge-key headers of a read-through 200 or 404 (`index-answers.ts`). */
  readonly tags: () => Record<string, string> | undefined
  readonly logger: { warn(details: object, message: string): void }
  /** Whether the CMS answers this instance's syncs; unset: it is not known to. */
  readonly cmsHealthy?: (() => boolean) | undefined
}

/** @param client the client's address, for its share of the CMS budget. */
export async function readForward(options: ForwardReadOptions, snapshot: Snapshot, forward: Forward, client: string | undefined): Promise<HttpAnswer> {
  try {
    const { answer, outcome } = await options.readThrough.get(forward.key, forward.relative, { store: forward.store, ...(client === undefined ? {} : { client }) })
    const dead = options.plans.answered(forward)
    if (dead !== undefined) options.readThrough.forget(dead)
    forward.learn?.(answer, outcome)
    return options.answers.answerOf(answer, outcome, snapshot, options.tags)
  } catch (error) {
    return failedForward(options, error, forward, client)
  }
}

function failedForward(options: ForwardReadOptions, error: unknown, forward: Forward, client: string | undefined): HttpAnswer {
  if (isOverBudget(error)) {
    // Only forwards the CMS answered are worth keeping: a flood of distinct refused queries
    // would otherwise fill the memory with plans never used again, and the garbage collector
    // would copy each of them into the old generation (docs/performance.md, "Refusals").
    options.plans.drop(forward.memoKey)
    return options.answers.refused(error as ProxyError, client)
  }
  // `code` at the top level, as on the sync's failure line, so one filter finds both.
  options.logger.warn({ err: error, code: isProxyError(error) ? error.code : undefined, query: forward.viewPath }, 'read-through to the CMS failed')
  const failure = isProxyError(error) ? error : undefined
  if (failure?.statusCode === 504) return options.answers.failed(failure)
  const blamed = cmsFailedOnInput(error, forward.params, () => options.cmsHealthy?.() ?? false)
  return blamed ? errorAnswer(blamed) : options.answers.failed(failure)
}
