/**
 * One site build's requests from one client: `concurrency` at a time (a build's workers) on an
 * undici Pool from the orchestrator's address, each answer read whole and timed, every status and
 * `Cache-Status` counted. Bounded: each answer within `timeoutMs`.
 * @module
 */
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { LatencyRecorder, type LatencySummary } from './stats.js'

export interface BuildRun {
  readonly requests: number
  readonly statuses: Readonly<Record<string, number>>
  /** `Cache-Status` of the answers, less cms-shield's name (`hit; detail=snapshot`, `fwd=miss; stored`…). */
  readonly cacheStatus: Readonly<Record<string, number>>
  readonly latency: LatencySummary
  /** From the first request to the last answer. */
  readonly wallMs: number
  /** Requests that got no answer (a timeout or a connection error), with a few examples. */
  readonly failed: number
  readonly failures: readonly string[]
}

export async function runBuild(origin: string, paths: readonly string[], concurrency: number, timeoutMs = 30_000): Promise<BuildRun> {
  const pool = new Pool(origin, { connections: concurrency, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: timeoutMs })
  const statuses: Record<string, number> = {}
  const cacheStatus: Record<string, number> = {}
  const latency = new LatencyRecorder()
  const failures: string[] = []
  let failed = 0
  let next = 0
  const started = performance.now()
  try {
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < paths.length) {
        const path = paths[next++]!
        const sent = performance.now()
        try {
          const response = await pool.request({ method: 'GET', path, headers: { accept: 'application/json' } })
          // Read whole: a build parses every byte (`dump()` would stop early on a large body).
          await response.body.arrayBuffer()
          latency.add(performance.now() - sent)
          statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1
          const cache = response.headers['cache-status']
          const key = typeof cache === 'string' ? cache.replace(/^cms-shield;\s*/, '').replace(/;\s*(age|ttl)=-?\d+/g, '') : 'none'
          cacheStatus[key] = (cacheStatus[key] ?? 0) + 1
        } catch (error) {
          failed++
          if (failures.length < 5) failures.push(`${path}: ${error instanceof Error ? error.message : String(error)}`)
        }
      }
    }))
  } finally {
    await pool.close()
  }
  return { requests: paths.length, statuses, cacheStatus, latency: latency.summary(), wallMs: performance.now() - started, failed, failures }
}
