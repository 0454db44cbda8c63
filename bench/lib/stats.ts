/**
 * Number helpers for the report: means, spreads, percentiles and a growable latency recorder.
 * @module
 */

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  return values.reduce((sum, value) => sum + value, 0) / values.length
}

/** Relative spread of `values`: (max − min) / mean. */
export function spread(values: readonly number[]): number {
  if (values.length < 2) return 0
  return (Math.max(...values) - Math.min(...values)) / mean(values)
}

/** Nearest-rank percentile of an ascending array (p from 0 to 100). */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)))
  return sorted[rank - 1] as number
}

export interface LatencySummary {
  count: number
  mean: number
  min: number
  p50: number
  p90: number
  p99: number
  max: number
}

/** Latencies in milliseconds, kept as floats (autocannon's own histogram rounds to whole milliseconds). */
export class LatencyRecorder {
  private values = new Float64Array(1 << 16)
  private size = 0

  add(ms: number): void {
    if (this.size === this.values.length) {
      const next = new Float64Array(this.values.length * 2)
      next.set(this.values)
      this.values = next
    }
    this.values[this.size++] = ms
  }

  get count(): number {
    return this.size
  }

  summary(): LatencySummary {
    const sorted = this.values.slice(0, this.size).sort()
    let total = 0
    for (const value of sorted) total += value
    return {
      count: this.size,
      mean: this.size === 0 ? Number.NaN : total / this.size,
      min: this.size === 0 ? Number.NaN : (sorted[0] as number),
      p50: percentileOfSorted(sorted, 50),
      p90: percentileOfSorted(sorted, 90),
      p99: percentileOfSorted(sorted, 99),
      max: this.size === 0 ? Number.NaN : (sorted[this.size - 1] as number),
    }
  }
}

export function summarize(values: readonly number[]): LatencySummary {
  const recorder = new LatencyRecorder()
  for (const value of values) recorder.add(value)
  return recorder.summary()
}

export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}
