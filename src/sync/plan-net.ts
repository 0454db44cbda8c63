/**
 * The sync's safety net under a budget (`SYNC_BUDGET`): how long the listing walk and the rolling
 * verification of details wait after spending CMS time, and which pages the verification reads
 * next. PURGE and webhook refreshes announce changes as they happen; the net is for what they
 * miss, and may be slow as long as it is cheap (docs/operations.md, "The sync's safety net").
 * Pure: no I/O, the clock's reading passed in.
 *
 * The CMS time a request cost is its response time: the time it held a CMS worker (and waited for
 * one, which the net is as much the cause of). Half the budget paces the walk, half the
 * verification, so that neither starves the other.
 * @module
 */

/** The share of the budget the listing walk may use; the verification uses the rest. */
export const WALK_SHARE = 0.5

/** Pages one verification step reads, one after another. */
export const VERIFY_BATCH = 4

/** Listing windows a paced walk reads at a time. */
export const NET_CONCURRENCY = 1

/**
 * Longest a verification with nothing due sleeps before looking again: a snapshot swapped in
 * meanwhile may hold pages verified long ago (one adopted from storage).
 */
export const IDLE_RECHECK_MS = 60_000

/**
 * Longest pause the pacing asks for. Node fires a timer longer than 2^31-1 ms (about 24.8 days) at
 * once, so a tiny budget on a huge tree would turn the pause into a busy loop; a week is far beyond
 * any sensible setting (`config/parse-value.ts` bounds durations alike).
 */
export const MAX_PAUSE_MS = 7 * 24 * 3_600_000

export interface WalkPacing {
  /** `SYNC_INTERVAL`. */
  readonly intervalMs: number
  /** CMS time the walk that just ended cost, ms. */
  readonly costMs: number
  /** `SYNC_BUDGET` as a fraction of one worker (> 0). */
  readonly budget: number
  /** The walk was cut short by a refresh: it is owed again as soon as its cost allows. */
  readonly preempted: boolean
}

/**
 * How long after a walk the next one starts: the interval when the budget allows, else as long
 * as the walk's cost takes to pay off at the walk's share of the budget.
 */
export function walkDelayMs(pacing: WalkPacing): number {
  const payOff = Math.min(MAX_PAUSE_MS, pacing.costMs / (pacing.budget * WALK_SHARE))
  return pacing.preempted ? payOff : Math.max(pacing.intervalMs, payOff)
}

/** How long after a verification step that cost `costMs` the next one may start. */
export function verifyDelayMs(costMs: number, budget: number): number {
  return Math.min(MAX_PAUSE_MS, costMs / (budget * (1 - WALK_SHARE)))
}

export interface VerifyPickInput {
  /** Page ids with the time each was last verified, oldest first (`verify-ledger.ts`). */
  readonly order: Iterable<readonly [number, number]>
  /** Whether the snapshot served still holds the page. */
  readonly holds: (id: number) => boolean
  readonly now: number
  /** `FULL_SYNC_INTERVAL`: a page is read again at most this often. */
  readonly cycleMs: number
  readonly batch: number
}

export interface VerifyPick {
  /** Pages to read now, oldest verified first. */
  readonly due: number[]
  /** Pages the snapshot no longer holds, met on the way: the ledger forgets them. */
  readonly gone: number[]
  /** When the next page falls due, if none is due beyond `due`; `undefined` when the ledger is empty. */
  readonly nextDueAt: number | undefined
}

/** The oldest-verified pages that are due, at most `batch` of them. */
export function pickDue(input: VerifyPickInput): VerifyPick {
  const due: number[] = []
  const gone: number[] = []
  for (const [id, verifiedAt] of input.order) {
    if (!input.holds(id)) {
      gone.push(id)
      continue
    }
    const dueAt = verifiedAt + input.cycleMs
    // Oldest first: once one is not due, none after it is.
    if (dueAt > input.now) return { due, gone, nextDueAt: due.length > 0 ? input.now : dueAt }
    if (due.length === input.batch) return { due, gone, nextDueAt: input.now }
    due.push(id)
  }
  return { due, gone, nextDueAt: due.length > 0 ? input.now : undefined }
}

/** How long the verification sleeps when a pick found nothing due. */
export function idleDelayMs(nextDueAt: number | undefined, now: number): number {
  return nextDueAt === undefined ? IDLE_RECHECK_MS : Math.min(IDLE_RECHECK_MS, Math.max(0, nextDueAt - now))
}
