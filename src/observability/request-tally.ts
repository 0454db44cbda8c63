/**
 * Counts HTTP requests by (route, method, status, cache) and times them in histogram buckets, with
 * plain numbers: one integer key and one Map lookup per request.
 *
 * prom-client's `counter.inc(labels)` and `histogram.observe(labels, v)` validate and hash their
 * label object on every call, children from `labels()` included. At tens of thousands of cached
 * answers a second that was most of what a metric cost. Here a request is counted
 * into a series found by one integer key, and prom-client reads the series only when scraped
 * (`metrics.ts`). Nothing here knows prom-client.
 *
 * Label values are folded into closed sets before they become a key, so the number of series is
 * bounded: unknown routes, cache outcomes and methods become `other`/`none`, a method in another
 * case is upper-cased first, and a status outside 100–599 becomes `other`.
 * @module
 */

export interface RequestLabels {
  readonly route: string
  readonly method: string
  /** An HTTP status code, or `other`. */
  readonly status: string
  readonly cache: string
}

export interface RequestSeries {
  readonly labels: RequestLabels
  /** Requests counted. */
  count: number
  /** Durations observed (a request whose duration is not a number is counted, not observed). */
  observed: number
  /** Sum of the observed durations, in the unit given to `record`. */
  sum: number
  /** Observations per bucket, not cumulative: `buckets[i]` holds those in (bounds[i-1], bounds[i]]. */
  readonly buckets: Float64Array
}

export interface RequestTallyOptions {
  /** Known routes; the last one also stands for any other. */
  readonly routes: readonly string[]
  /** Known cache outcomes; the last one also stands for any other. */
  readonly caches: readonly string[]
  /** Methods worth a series of their own, upper case; anything else is `other`. */
  readonly methods: readonly string[]
  /** Upper bounds of the histogram buckets, ascending (the +Inf bucket is implied). */
  readonly bounds: readonly number[]
}

export interface RequestTally {
  readonly bounds: readonly number[]
  /**
   * Counts one request; `duration` is observed when it is a finite number (negative counts as 0).
   * Returns the series counted, whose labels are the folded ones.
   */
  record(route: string, method: string, status: number, cache: string, duration: number): RequestSeries
  /** Every series counted so far, in the order they first appeared. */
  series(): readonly RequestSeries[]
}

/** Distinct statuses a key can hold: 100–599 as themselves, anything else as one `other`. */
const STATUS_SLOTS = 600
const OTHER_STATUS = 0

export function createRequestTally(options: RequestTallyOptions): RequestTally {
  const bounds = [...options.bounds]
  for (let i = 1; i < bounds.length; i++) {
    if (!(bounds[i]! > bounds[i - 1]!)) throw new RangeError('expected histogram bounds in ascending order')
  }
  const routes = indexOf(options.routes)
  const caches = indexOf(options.caches)
  const methods = indexOf([...options.methods, 'other'])
  const otherMethod = options.methods.length
  const byKey = new Map<number, RequestSeries>()
  const all: RequestSeries[] = []

  function methodIndex(method: string): number {
    const found = methods.get(method)
    if (found !== undefined) return found
    return methods.get(method.toUpperCase()) ?? otherMethod
  }

  return {
    bounds,
    record(route, method, status, cache, duration) {
      const r = routes.get(route) ?? options.routes.length - 1
      const c = caches.get(cache) ?? options.caches.length - 1
      const m = methodIndex(method)
      const s = Number.isInteger(status) && status >= 100 && status <= 599 ? status : OTHER_STATUS
      const key = ((r * options.caches.length + c) * methods.size + m) * STATUS_SLOTS + s
      let series = byKey.get(key)
      if (series === undefined) {
        series = {
          labels: {
            route: options.routes[r]!,
            method: m === otherMethod ? 'other' : options.methods[m]!,
            status: s === OTHER_STATUS ? 'other' : String(s),
            cache: options.caches[c]!,
          },
          count: 0,
          observed: 0,
          sum: 0,
          buckets: new Float64Array(bounds.length + 1),
        }
        byKey.set(key, series)
        all.push(series)
      }
      series.count++
      if (Number.isFinite(duration)) {
        const value = duration > 0 ? duration : 0
        let b = 0
        while (b < bounds.length && value > bounds[b]!) b++
        series.buckets[b]!++
        series.observed++
        series.sum += value
      }
      return series
    },
    series: () => all,
  }
}

function indexOf(values: readonly string[]): Map<string, number> {
  const map = new Map<string, number>()
  values.forEach((value, index) => {
    if (!map.has(value)) map.set(value, index)
  })
  return map
}
