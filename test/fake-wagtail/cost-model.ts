/**
 * A CMS that charges: the fake's answers cost worker time, as a gunicorn-served Wagtail's do. The
 * CMS has a number of workers; each request waits for a free one and holds it for its cost (per
 * listing item, per detail, a fixed part per request), and the busy time spent is counted, in total
 * and by kind, so that a test or the benchmark reads what the shield's sync cost the CMS.
 *
 * Off unless the fake is started with `cost` (or given one by `setCost`): every other test sees the
 * fake answer at once, as before.
 * @module
 */

/** What one request costs the CMS, in ms of one worker's time. */
export interface CostRates {
  /** Per item of a listing that shows `meta.html_url` (the CMS resolves each page's URL). */
  readonly listItemMs: number
  /** Per item of a listing asked without `html_url` (`fields=-html_url,…`). */
  readonly listItemWithoutUrlMs: number
  /** Per page detail. */
  readonly detailMs: number
  /** Every request, whatever it asks (routing, middleware, the envelope). */
  readonly requestMs: number
}

export interface CostModelOptions extends Partial<CostRates> {
  /** gunicorn workers: how many requests the CMS works on at once. */
  readonly workers?: number
  /**
   * Holds a worker for `ms`: a timer by default, an advance of an injected clock in a test. The
   * busy time counted is the cost charged, whatever the hold took.
   */
  readonly hold?: (ms: number) => Promise<void>
}

/**
 * Measured against the lab's Wagtail 7.3.4 served by gunicorn over SQLite (lab/FACTS.md §8,
 * `lab/request-cost.sh`: gunicorn CPU per request as the sync asks it): a request costs about 11 ms
 * before its first item (Django, DRF and Wagtail), a listing item about 0.43 ms as the walk reads
 * it without `html_url` and 0.88 ms with it, and a detail about 15.5 ms in all.
 */
export const MEASURED_RATES: CostRates = { listItemMs: 0.88, listItemWithoutUrlMs: 0.43, detailMs: 4.5, requestMs: 11 }

/** gunicorn's usual `2 × cores + 1` on a two-core host, rounded down to a small CMS's four. */
export const DEFAULT_WORKERS = 4

export type CostKind = 'listing' | 'detail' | 'other'

export interface BusyTime {
  /** Worker time spent, ms. */
  readonly totalMs: number
  readonly listingMs: number
  readonly detailMs: number
  readonly otherMs: number
  /** Requests charged. */
  readonly requests: number
  /** Of which waited for a free worker. */
  readonly waited: number
}

export interface CostModel {
  readonly rates: CostRates
  readonly workers: number
  /** Waits for a free worker and holds it for `costMs`; counts the time under `kind`. */
  charge(kind: CostKind, costMs: number): Promise<void>
  busy(): BusyTime
  /** Zeroes the counters (requests in flight still count when they end). */
  reset(): void
}

/** What one request costs: `items` is the listing's item count (ignored for other kinds). */
export function costOf(rates: CostRates, kind: CostKind, items = 0, withUrl = true): number {
  if (kind === 'listing') return rates.requestMs + items * (withUrl ? rates.listItemMs : rates.listItemWithoutUrlMs)
  if (kind === 'detail') return rates.requestMs + rates.detailMs
  return rates.requestMs
}

function zeroBusy(): { totalMs: number; listingMs: number; detailMs: number; otherMs: number; requests: number; waited: number } {
  return { totalMs: 0, listingMs: 0, detailMs: 0, otherMs: 0, requests: 0, waited: 0 }
}

const realHold = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export function createCostModel(options: CostModelOptions = {}): CostModel {
  const rates: CostRates = {
    listItemMs: options.listItemMs ?? MEASURED_RATES.listItemMs,
    listItemWithoutUrlMs: options.listItemWithoutUrlMs ?? MEASURED_RATES.listItemWithoutUrlMs,
    detailMs: options.detailMs ?? MEASURED_RATES.detailMs,
    requestMs: options.requestMs ?? MEASURED_RATES.requestMs,
  }
  const workers = Math.max(1, Math.floor(options.workers ?? DEFAULT_WORKERS))
  const hold = options.hold ?? realHold
  let free = workers
  const waiting: (() => void)[] = []
  let counters = zeroBusy()

  const acquire = (): Promise<void> | undefined => {
    if (free > 0) {
      free--
      return undefined
    }
    return new Promise((resolve) => waiting.push(resolve))
  }
  const release = (): void => {
    const next = waiting.shift()
    if (next) next()
    else free++
  }

  return {
    rates,
    workers,
    async charge(kind, costMs) {
      const wait = acquire()
      const tally = counters
      if (wait) {
        tally.waited++
        await wait
      }
      try {
        await hold(costMs)
      } finally {
        tally.totalMs += costMs
        tally[`${kind}Ms`] += costMs
        tally.requests++
        release()
      }
    },
    busy: () => ({ ...counters }),
    reset() {
      counters = zeroBusy()
    },
  }
}
