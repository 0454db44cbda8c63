/**
 * The flood scenario's flooding client, in a process of its own: at 200 requests in flight its
 * event loop is saturated, and the orchestrator times the well-behaved clients beside it, which
 * must not wait behind its callbacks.
 *
 *   BENCH_FLOOD_TARGET=http://127.0.0.1:<port> node --import tsx bench/flood-client.ts
 *
 * A closed loop of BENCH_FLOOD_CONCURRENCY requests (undici Pool, one connection each, pipelining 1)
 * from BENCH_FLOOD_LOCAL_ADDRESS, so that cms-shield sees one client apart from the others on
 * loopback. Every request is a distinct read-through query (lib/flood-queries.ts). It sends for
 * BENCH_FLOOD_SECONDS (at most BENCH_FLOOD_MAX_REQUESTS), waits for what is in flight (each answer
 * bounded by BENCH_FLOOD_TIMEOUT_MS), prints one line `flood-client done <json>` and exits.
 * It prints `flood-client started` when the first requests go out, and exits when its standard
 * input closes (the orchestrator died).
 * @module
 */
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { FLOOD_KINDS, floodQuery } from './lib/flood-queries.js'
import type { FloodKind, FloodReport } from './lib/flood-queries.js'
import { LatencyRecorder } from './lib/stats.js'

function env(name: string, fallback?: string): string {
  const value = process.env[name]?.trim()
  if (value !== undefined && value !== '') return value
  if (fallback !== undefined) return fallback
  process.stderr.write(`flood-client: ${name} is required\n`)
  process.exit(2)
}

function envInt(name: string, fallback: number): number {
  const value = Number(env(name, String(fallback)))
  if (!Number.isSafeInteger(value) || value <= 0) {
    process.stderr.write(`flood-client: ${name} must be a positive integer\n`)
    process.exit(2)
  }
  return value
}

const target = env('BENCH_FLOOD_TARGET')
const seconds = envInt('BENCH_FLOOD_SECONDS', 30)
const concurrency = envInt('BENCH_FLOOD_CONCURRENCY', 200)
const timeoutMs = envInt('BENCH_FLOOD_TIMEOUT_MS', 5_000)
const maxRequests = envInt('BENCH_FLOOD_MAX_REQUESTS', 1_000_000)
const localAddress = env('BENCH_FLOOD_LOCAL_ADDRESS', '127.0.0.1')
const run = env('BENCH_FLOOD_RUN', Date.now().toString(36))
const parentIds = env('BENCH_FLOOD_PARENTS', '1').split(',').map(Number).filter(Number.isSafeInteger)

const statuses: Record<string, number> = {}
const statusesByKind: Record<string, Record<string, number>> = Object.fromEntries(FLOOD_KINDS.map((kind) => [kind, {}]))
const cacheStatus: Record<string, number> = {}
const latency = new LatencyRecorder()
const errorSamples: string[] = []
let sent = 0
let answered = 0
let late = 0
let timeouts = 0
let errors = 0
let withoutRetryAfter = 0
let withoutMessage = 0
let retryMin: number | null = null
let retryMax: number | null = null

const bump = (counts: Record<string, number>, key: string): void => {
  counts[key] = (counts[key] ?? 0) + 1
}

const pool = new Pool(target, {
  connections: concurrency,
  pipelining: 1,
  localAddress,
  // The bound on every answer: no headers (or a body stalled) for this long counts as a timeout.
  headersTimeout: timeoutMs,
  bodyTimeout: timeoutMs,
  connectTimeout: timeoutMs,
})

async function one(kind: FloodKind, path: string): Promise<void> {
  const started = performance.now()
  try {
    const response = await pool.request({ method: 'GET', path, headers: { accept: 'application/json' } })
    const status = response.statusCode
    let body = ''
    if (status === 429 || status === 503) {
      body = await response.body.text()
      const retryAfter = response.headers['retry-after']
      if (typeof retryAfter === 'string' && /^\d+$/.test(retryAfter.trim())) {
        const value = Number(retryAfter)
        retryMin = retryMin === null ? value : Math.min(retryMin, value)
        retryMax = retryMax === null ? value : Math.max(retryMax, value)
      } else {
        withoutRetryAfter++
      }
      let message: unknown
      try {
        message = (JSON.parse(body) as { message?: unknown }).message
      } catch {
        message = undefined
      }
      if (typeof message !== 'string') withoutMessage++
    } else {
      await response.body.dump()
    }
    const ms = performance.now() - started
    answered++
    latency.add(ms)
    if (ms > timeoutMs) late++
    bump(statuses, String(status))
    bump(statusesByKind[kind] as Record<string, number>, String(status))
    if (status === 200) {
      const cache = response.headers['cache-status']
      bump(cacheStatus, typeof cache === 'string' ? cache.replace(/^cms-shield;\s*/, '').replace(/;\s*(age|ttl)=-?\d+/g, '') : 'none')
    }
  } catch (error) {
    const code = (error as { code?: string }).code ?? ''
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') timeouts++
    else {
      errors++
      if (errorSamples.length < 5) errorSamples.push(`${path}: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
}

let stopped = false
process.stdin.on('end', () => process.exit(1))
process.stdin.on('error', () => process.exit(1))
process.stdin.resume()
process.once('SIGTERM', () => {
  stopped = true
})

const startedAt = performance.now()
const sendUntil = startedAt + seconds * 1000
// From here on: the orchestrator counts this process's CPU against the machine's, and it may have exited by then.
const cpuAtStart = process.cpuUsage()
process.stdout.write('flood-client started\n')
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (!stopped && sent < maxRequests && performance.now() < sendUntil) {
      const { kind, path } = floodQuery(run, sent++, parentIds)
      await one(kind, path)
    }
  }),
)
const report: FloodReport = {
  sent,
  answered,
  durationMs: Math.round((performance.now() - startedAt) * 10) / 10,
  cpuSeconds: (() => {
    const used = process.cpuUsage(cpuAtStart)
    return Math.round((used.user + used.system) / 1e4) / 100
  })(),
  statuses,
  statusesByKind,
  cacheStatus,
  rejectionsWithoutRetryAfter: withoutRetryAfter,
  rejectionsWithoutMessage: withoutMessage,
  retryAfterSeconds: { min: retryMin, max: retryMax },
  latencyMs: latency.summary(),
  late,
  timeouts,
  errors,
  errorSamples,
}
process.stdout.write(`flood-client done ${JSON.stringify(report)}\n`)
await pool.close().catch(() => undefined)
process.exit(0)
