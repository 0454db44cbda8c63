/**
 * The part of autocannon's programmatic API the benchmark uses (autocannon ships no types, and the
 * benchmark adds no `@types` package for it).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface RequestParams {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string | Buffer
    }
    interface Request extends RequestParams {
      /** Called before each request of this entry; returns the request to send. */
      setupRequest?: (request: RequestParams, context: Record<string, unknown>) => RequestParams
    }
    interface Options {
      url: string
      connections?: number
      pipelining?: number
      /** Seconds. */
      duration?: number
      /** Stop after this many requests instead of after `duration`. */
      amount?: number
      /** Seconds a request may take before it counts as a timeout. */
      timeout?: number
      method?: string
      headers?: Record<string, string>
      requests?: Request[]
      /** Millisecond interval of the per-second samples. */
      sampleInt?: number
      excludeErrorStats?: boolean
      title?: string
    }
    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total: number
      p50: number
      p90: number
      p99: number
      [percentile: string]: number
    }
    interface Result {
      duration: number
      start: Date
      finish: Date
      errors: number
      timeouts: number
      non2xx: number
      resets: number
      '2xx': number
      statusCodeStats: Record<string, { count: number }>
      latency: Histogram
      requests: Histogram & { sent: number }
      throughput: Histogram
    }
    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop(): void
      on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): this
      on(event: string, listener: (...args: unknown[]) => void): this
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance
  export = autocannon
}
