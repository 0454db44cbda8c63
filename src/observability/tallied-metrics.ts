/**
 * prom-client metrics whose samples are read from a `RequestTally` when scraped, instead of being
 * moved by `inc()`/`observe()` on every request (see `request-tally.ts` for why).
 *
 * They extend prom-client's own Counter and Histogram so that a registry, its text and JSON
 * output, `registers` and `reset()` treat them like any other; only `get()` (and, for the
 * histogram, `getForPromString()`) are replaced, and they produce the same sample shapes
 * prom-client's own classes do: `{labels, value}` for a counter, `_bucket` (cumulative, `le` first),
 * `_sum` and `_count` per label set for a histogram.
 *
 * `getForPromString()` is not prom-client's public API: its registry happens to prefer it over
 * `get()` when rendering the text format, and a release may stop doing so or call something else,
 * leaving the inherited method to print the empty state prom-client's own class keeps. So this
 * module checks once, when loaded, that a registry renders tallied metrics exactly as it renders
 * prom-client's own fed the same requests ({@link checkTalliedMetrics}); where it does not,
 * {@link TALLIED_METRICS_SUPPORTED} is false and `metrics.ts` feeds plain prom-client metrics per
 * request instead, as it also does with `PRIVATE_APIS=false`.
 * @module
 */
import { Counter, Histogram, Registry, type CounterConfiguration, type HistogramConfiguration, type MetricObjectWithValues, type MetricValue, type MetricValueWithName } from 'prom-client'
import { createRequestTally, type RequestLabels, type RequestSeries, type RequestTally } from './request-tally.js'

type CounterLabel = keyof RequestLabels

/** `http_requests_total`: every series' request count. */
export class TalliedCounter extends Counter<CounterLabel> {
  readonly #tally: RequestTally

  constructor(configuration: Omit<CounterConfiguration<CounterLabel>, 'labelNames'>, tally: RequestTally) {
    super({ ...configuration, labelNames: ['route', 'method', 'status', 'cache'] })
    this.#tally = tally
  }

  override async get(): Promise<MetricObjectWithValues<MetricValue<CounterLabel>>> {
    const metric = await super.get()
    const values = this.#tally.series().map((series) => ({
      labels: { route: series.labels.route, method: series.labels.method, status: series.labels.status, cache: series.labels.cache },
      value: series.count,
    }))
    return { ...metric, values }
  }
}

type HistogramLabel = 'route' | 'cache'

/** `http_request_duration_seconds` by route and cache outcome: the tally's series summed over method and status. */
export class TalliedHistogram extends Histogram<HistogramLabel> {
  readonly #tally: RequestTally
  readonly #name: string
  readonly #help: string

  constructor(configuration: Omit<HistogramConfiguration<HistogramLabel>, 'labelNames' | 'buckets'>, tally: RequestTally) {
    super({ ...configuration, labelNames: ['route', 'cache'], buckets: [...tally.bounds] })
    this.#tally = tally
    this.#name = configuration.name
    this.#help = configuration.help
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<HistogramLabel>>> {
    return this.#samples()
  }

  /**
   * The registry prefers this one, when a metric has it, for the text format: prom-client's own
   * Histogram splits its labels differently here than in `get()`, but both shapes print the same.
   */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<HistogramLabel>>> {
    return this.#samples()
  }

  #samples(): MetricObjectWithValues<MetricValueWithName<HistogramLabel>> {
    const { bounds } = this.#tally
    const name = this.#name
    const values: Array<MetricValueWithName<HistogramLabel>> = []
    for (const group of groupByRouteAndCache(this.#tally.series(), bounds.length)) {
      const { route, cache } = group
      let cumulative = 0
      for (let i = 0; i < bounds.length; i++) {
        cumulative += group.buckets[i]!
        values.push({ labels: { le: bounds[i]!, route, cache } as Record<HistogramLabel | 'le', string | number>, value: cumulative, metricName: `${name}_bucket` })
      }
      values.push({ labels: { le: '+Inf', route, cache } as Record<HistogramLabel | 'le', string | number>, value: group.observed, metricName: `${name}_bucket` })
      values.push({ labels: { route, cache }, value: group.sum, metricName: `${name}_sum` })
      values.push({ labels: { route, cache }, value: group.observed, metricName: `${name}_count` })
    }
    // prom-client's typings call `type` an enum (and want `collect`); at run time it is the exposition's word.
    return { name, help: this.#help, type: 'histogram', values, aggregator: 'sum' } as unknown as MetricObjectWithValues<MetricValueWithName<HistogramLabel>>
  }
}

interface Group {
  readonly route: string
  readonly cache: string
  observed: number
  sum: number
  readonly buckets: Float64Array
}

/** Series with nothing observed (every duration was not a number) leave their group absent, as prom-client would. */
function groupByRouteAndCache(series: readonly RequestSeries[], bucketCount: number): Group[] {
  const groups = new Map<string, Group>()
  for (const each of series) {
    if (each.observed === 0) continue
    const key = `${each.labels.route}\u0000${each.labels.cache}`
    let group = groups.get(key)
    if (!group) {
      group = { route: each.labels.route, cache: each.labels.cache, observed: 0, sum: 0, buckets: new Float64Array(bucketCount + 1) }
      groups.set(key, group)
    }
    group.observed += each.observed
    group.sum += each.sum
    for (let i = 0; i <= bucketCount; i++) group.buckets[i]! += each.buckets[i]!
  }
  return [...groups.values()]
}

/** What the self-check records: a few series, one with a duration that is not observed. */
const CHECK_REQUESTS: ReadonlyArray<[route: string, method: string, status: number, cache: string, seconds: number]> = [
  ['detail', 'GET', 200, 'snapshot', 0.0004],
  ['detail', 'get', 200, 'snapshot', 0.003],
  ['list', 'HEAD', 304, 'hit', 0.02],
  ['other', 'BREW', 999, 'none', Number.NaN],
  ['detail', 'GET', 404, 'snapshot', 3],
]

/**
 * The public way to the same samples: prom-client's own Counter and Histogram, moved per request
 * with the labels the tally folds to. Returns the function that records one request.
 */
export function plainRequestMetrics(
  configuration: { counter: Omit<CounterConfiguration<CounterLabel>, 'labelNames'>; histogram: Omit<HistogramConfiguration<HistogramLabel>, 'labelNames' | 'buckets'> },
  tally: RequestTally,
): (route: string, method: string, status: number, cache: string, seconds: number) => void {
  const counter = new Counter({ ...configuration.counter, labelNames: ['route', 'method', 'status', 'cache'] })
  const histogram = new Histogram({ ...configuration.histogram, labelNames: ['route', 'cache'], buckets: [...tally.bounds] })
  return (route, method, status, cache, seconds) => {
    const { labels } = tally.record(route, method, status, cache, seconds)
    counter.inc({ route: labels.route, method: labels.method, status: labels.status, cache: labels.cache })
    if (Number.isFinite(seconds)) histogram.observe({ route: labels.route, cache: labels.cache }, seconds > 0 ? seconds : 0)
  }
}

/**
 * Whether a prom-client registry renders {@link TalliedCounter} and {@link TalliedHistogram}
 * exactly as it renders its own metrics fed the same requests, on the prom-client installed: both
 * texts must be equal and show every series. Any error reads as unsupported.
 */
export async function checkTalliedMetrics(Tallied: { counter: typeof TalliedCounter; histogram: typeof TalliedHistogram } = { counter: TalliedCounter, histogram: TalliedHistogram }): Promise<boolean> {
  try {
    const bounds = [0.001, 0.01, 0.1, 1]
    const options = { routes: ['detail', 'list', 'other'], caches: ['snapshot', 'hit', 'none'], methods: ['GET', 'HEAD'], bounds }
    const names = { counter: { name: 'check_requests_total', help: 'check' }, histogram: { name: 'check_duration_seconds', help: 'check' } }
    const tallied = new Registry()
    const tally = createRequestTally(options)
    new Tallied.counter({ ...names.counter, registers: [tallied] }, tally)
    new Tallied.histogram({ ...names.histogram, registers: [tallied] }, tally)
    const plain = new Registry()
    const record = plainRequestMetrics({ counter: { ...names.counter, registers: [plain] }, histogram: { ...names.histogram, registers: [plain] } }, createRequestTally(options))
    for (const [route, method, status, cache, seconds] of CHECK_REQUESTS) {
      tally.record(route, method, status, cache, seconds)
      record(route, method, status, cache, seconds)
    }
    const [got, expected] = await Promise.all([tallied.metrics(), plain.metrics()])
    return got === expected && expected.includes('check_requests_total{route="other",method="other",status="other",cache="none"} 1') && expected.includes('check_duration_seconds_count{route="detail",cache="snapshot"} 3')
  } catch {
    return false
  }
}

/** Whether the tallied metrics render as prom-client's own would, checked once when this module is loaded. */
export const TALLIED_METRICS_SUPPORTED: boolean = await checkTalliedMetrics()
