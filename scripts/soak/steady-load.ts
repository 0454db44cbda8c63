/**
 * The soak's load: autocannon (programmatic, pipelining 1) at a fixed overall rate over a mix of
 * what readers of the seed site send, with every answer counted per kind and every latency kept
 * (as floats, like bench/lib/load.ts) in the current window.
 *
 * autocannon's rate limit is per connection and per second: a connection sends its quota back to
 * back, then waits for its one-second timer. All connections of one instance share the phase of
 * that timer, so a single instance at 1,500 req/s sends everything in one burst at the start of
 * each second and its latency measures the burst, not the steady state. The load is therefore
 * split into lanes, separate instances started 1/lanes of a second apart, each with a few
 * connections: the bursts are small and spread over the second.
 * @module
 */
import autocannon from 'autocannon'
import { LatencyRecorder } from '../../bench/lib/stats.js'
import type { LatencySummary } from '../../bench/lib/stats.js'

export type RequestKind = 'detail' | 'revalidate' | 'seed' | 'list' | 'search' | 'find'

/** Share of each kind in the mix (sums to 1). */
export const MIX: Readonly<Record<RequestKind, number>> = {
  detail: 0.5,
  revalidate: 0.1,
  seed: 0.15,
  list: 0.1,
  search: 0.08,
  find: 0.07,
}

/**
 * The answer each kind should get. A revalidation whose page changed since its ETag was read gets
 * the new 200 (counted apart, not as an error); the ETags are read again every window.
 */
export const EXPECTED: Readonly<Record<RequestKind, readonly number[]>> = {
  detail: [200],
  revalidate: [304, 200],
  seed: [200],
  list: [200],
  search: [200],
  find: [302],
}

export interface LoadPlan {
  /** Detail paths of pages that never stop answering 200 (the edits only delete their own pages). */
  readonly detailPaths: readonly string[]
  readonly seedPath: string
  readonly listPath: string
  readonly searchPaths: readonly string[]
  /** `find/?html_path=` of top-level pages, which the edits never move: always a 302. */
  readonly findPaths: readonly string[]
  /** Path → the ETag last seen for it; replaced as a whole by `setEtags`. */
  etags: ReadonlyArray<readonly [path: string, etag: string]>
}

export interface WindowCounts {
  requests: number
  latencyMs: LatencySummary
  /** `kind status` → count, e.g. `detail 200`. */
  statuses: Record<string, number>
  byKind: Record<string, { requests: number; p99Ms: number }>
  /** Answers whose status is not in EXPECTED for their kind. */
  unexpected: number
  /** Revalidations answered 200 because the page changed after its ETag was read. */
  etagChanged: number
  errors: number
  timeouts: number
  /** Latest error messages of the window (a few), for the report. */
  errorSamples: string[]
}

const KINDS = Object.keys(MIX) as RequestKind[]

/** Collects one window's answers; `take()` returns them and starts the next window. */
export class WindowRecorder {
  private all = new LatencyRecorder()
  private perKind = new Map<RequestKind, LatencyRecorder>()
  private statuses: Record<string, number> = {}
  private unexpected = 0
  private etagChanged = 0
  private errors = 0
  private timeouts = 0
  private errorSamples: string[] = []

  answer(kind: RequestKind, status: number, ms: number): void {
    this.all.add(ms)
    let recorder = this.perKind.get(kind)
    if (!recorder) {
      recorder = new LatencyRecorder()
      this.perKind.set(kind, recorder)
    }
    recorder.add(ms)
    const key = `${kind} ${status}`
    this.statuses[key] = (this.statuses[key] ?? 0) + 1
    if (!EXPECTED[kind].includes(status)) this.unexpected++
    else if (kind === 'revalidate' && status === 200) this.etagChanged++
  }

  error(error: Error): void {
    this.errors++
    if (/timed out/.test(error.message)) this.timeouts++
    if (this.errorSamples.length < 5) this.errorSamples.push(error.message)
  }

  take(): WindowCounts {
    const byKind: WindowCounts['byKind'] = {}
    for (const [kind, recorder] of this.perKind) {
      const summary = recorder.summary()
      byKind[kind] = { requests: summary.count, p99Ms: summary.p99 }
    }
    const counts: WindowCounts = {
      requests: this.all.count,
      latencyMs: this.all.summary(),
      statuses: this.statuses,
      byKind,
      unexpected: this.unexpected,
      etagChanged: this.etagChanged,
      errors: this.errors,
      timeouts: this.timeouts,
      errorSamples: this.errorSamples,
    }
    this.all = new LatencyRecorder()
    this.perKind = new Map()
    this.statuses = {}
    this.unexpected = this.etagChanged = this.errors = this.timeouts = 0
    this.errorSamples = []
    return counts
  }
}

function pickOf<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)] as T
}

function pickKind(): RequestKind {
  let roll = Math.random()
  for (const kind of KINDS) {
    roll -= MIX[kind]
    if (roll < 0) return kind
  }
  return 'detail'
}

interface Chosen {
  kind: RequestKind
  path: string
  etag?: string
}

function choose(plan: LoadPlan): Chosen {
  const kind = pickKind()
  switch (kind) {
    case 'detail':
      return { kind, path: pickOf(plan.detailPaths) }
    case 'revalidate': {
      if (plan.etags.length === 0) return { kind: 'detail', path: pickOf(plan.detailPaths) }
      const [path, etag] = pickOf(plan.etags)
      return { kind, path, etag }
    }
    case 'seed':
      return { kind, path: plan.seedPath }
    case 'list':
      return { kind, path: plan.listPath }
    case 'search':
      return { kind, path: pickOf(plan.searchPaths) }
    case 'find':
      return { kind, path: pickOf(plan.findPaths) }
  }
}

export interface SteadyLoadOptions {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  readonly rate: number
  readonly lanes: number
  readonly connectionsPerLane: number
  /** Upper bound; the load is normally ended with `stop()`. */
  readonly maxDurationS: number
  readonly plan: LoadPlan
  readonly recorder: WindowRecorder
}

export interface SteadyLoad {
  /** Stops every lane and resolves once all have ended (bounded). */
  stop(): Promise<void>
}

/** The parts of autocannon's options and requests that bench/autocannon.d.ts does not declare. */
type RatedOptions = autocannon.Options & { overallRate: number }
type CountedRequest = autocannon.Request & {
  onResponse: (status: number, body: string, context: Record<string, unknown>) => void
}

export function startSteadyLoad(options: SteadyLoadOptions): SteadyLoad {
  const { plan, recorder } = options
  const instances: autocannon.Instance[] = []
  const finished: Array<PromiseLike<unknown>> = []
  const starters: NodeJS.Timeout[] = []
  let stopped = false
  // autocannon calls a request's onResponse and then, synchronously and for the same client, emits
  // 'response' with the latency: the first tells the kind, the second the time.
  let answered: { kind: RequestKind; status: number } | undefined

  const request: CountedRequest = {
    setupRequest: (base, context) => {
      const chosen = choose(plan)
      context.kind = chosen.kind
      // A fresh headers object each time: autocannon keeps the one it is given for later requests.
      const headers = chosen.etag === undefined ? { ...base.headers } : { ...base.headers, 'if-none-match': chosen.etag }
      return { ...base, path: chosen.path, headers }
    },
    onResponse: (status, _body, context) => {
      answered = { kind: context.kind as RequestKind, status }
    },
  }

  const laneRate = (lane: number): number => Math.floor(options.rate / options.lanes) + (lane < options.rate % options.lanes ? 1 : 0)
  const startLane = (lane: number): void => {
    if (stopped) return
    const rate = laneRate(lane)
    if (rate === 0) return
    const laneOptions: RatedOptions = {
      url: `${options.origin}${plan.listPath}`,
      connections: Math.min(options.connectionsPerLane, rate),
      pipelining: 1,
      overallRate: rate,
      duration: options.maxDurationS,
      timeout: 10,
      requests: [request],
    }
    const instance = autocannon(laneOptions)
    instance.on('response', (_client: unknown, status: number, _bytes: number, responseTime: number) => {
      const kind = answered?.kind ?? 'detail'
      answered = undefined
      recorder.answer(kind, status, responseTime)
    })
    instance.on('reqError', (error: unknown) => recorder.error(error instanceof Error ? error : new Error(String(error))))
    instances.push(instance)
    finished.push(instance)
  }

  for (let lane = 0; lane < options.lanes; lane++) {
    starters.push(setTimeout(() => startLane(lane), Math.round((lane * 1000) / options.lanes)))
  }

  return {
    async stop() {
      stopped = true
      for (const starter of starters) clearTimeout(starter)
      for (const instance of instances) instance.stop()
      let guard: NodeJS.Timeout | undefined
      await Promise.race([
        Promise.allSettled(finished),
        new Promise((resolve) => {
          guard = setTimeout(resolve, 15_000)
        }),
      ])
      clearTimeout(guard)
    },
  }
}
