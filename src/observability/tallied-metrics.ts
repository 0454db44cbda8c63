/**
 * prom-client metrics whose samples are read from a `RequestTally` when scraped, instead of being
 * moved by `inc()`/`observe()` on every request (see `request-tally.ts` for why).
 *
 * They extend prom-client's own Counter and Histogram so that a registry, its text and JSON
 * output, `registers` and `reset()` treat them like any other; only `get()` (and, for the
 * histogram, `getForPromString()`) are replaced, and they produce the same sample shapes
 * prom-client's own classes do: `{labels, value}` for a counter, `_bucket` (cumulative, `le` first),
 * `_sum` and `_count` per label set for a histogram.
 * @module
 */
import { Counter, Histogram, type CounterConfiguration, type HistogramConfiguration, type MetricObjectWithValues, type MetricValue, type MetricValueWithName } from 'prom-client'
import type { RequestLabels, RequestSeries, RequestTally } from './request-tally.js'

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
