/**
 * cms-shield as the benchmark runs it: `node dist/main.js` in a process of its own (on the
 * server's CPU when pinned), with a sync and cache lifetime long enough that nothing happens
 * unless a scenario asks, its log in a file; and the waits on its `/metrics` and `/readyz`.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { SHIELD_ENTRY } from './config.js'
import { call, freePort, getJson, GiveUp, metricSum, parseMetrics, waitFor } from './http.js'
import type { MetricSample } from './http.js'
import type { LoadTarget } from './load.js'
import type { Origin } from './origin-control.js'
import { BenchChild } from './processes.js'

export interface Shield extends LoadTarget {
  child: BenchChild
  token: string
  logFile: string
  /** From spawn to the first /readyz 200. */
  readyAfterMs: number
}

/** Where every cms-shield of a run writes its log, which CPU it gets, and BENCH_SHIELD_ENV. */
export interface ShieldSettings {
  workDir: string
  cpu: number | undefined
  shieldEnv: Record<string, string>
  /** Another build's entry (an A/B run of `flood-cpu.ts`); `dist/main.js` otherwise. */
  entry?: string
  /** Node flags before the entry (`--cpu-prof`…). */
  nodeArgs?: readonly string[]
}

/** `env`: variables of this scenario's own (BENCH_SHIELD_ENV still wins). */
export async function startShield(
  { workDir, cpu, shieldEnv, entry = SHIELD_ENTRY, nodeArgs = [] }: ShieldSettings,
  label: string,
  origin: Origin,
  logLevel: 'warn' | 'info',
  readyTimeoutMs: number,
  env: Record<string, string> = {},
): Promise<Shield> {
  const port = await freePort()
  const token = randomBytes(24).toString('hex')
  const logFile = join(workDir, `${label.replace(/[^a-z0-9]+/gi, '-')}.log`)
  const url = `http://127.0.0.1:${port}`
  const spawnedAt = performance.now()
  const child = new BenchChild(label, [...nodeArgs, entry], {
    env: {
      UPSTREAM_URL: origin.api,
      BASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: logLevel,
      SYNC_INTERVAL: '24h',
      FULL_SYNC_INTERVAL: '168h',
      REFRESH_TOKEN: token,
      CACHE_TTL: '24h',
      ...env,
      ...shieldEnv,
    },
    stdoutFile: logFile,
    ...(cpu !== undefined ? { cpu } : {}),
  })
  await waitFor(`${label} /readyz 200`, readyTimeoutMs, 50, async () => {
    if (!child.alive) throw new GiveUp(`${label} exited before it was ready:\n${child.output()}`)
    const response = await call(`${url}/readyz`, { timeoutMs: 2_000 })
    return response.status === 200 ? true : undefined
  })
  return { name: 'cms-shield', origin: url, pid: child.pid, child, token, logFile, readyAfterMs: performance.now() - spawnedAt }
}

/** What the helpers below need of a cms-shield: where it listens. */
export type ShieldAddress = Pick<Shield, 'origin'>

export async function shieldMetrics(shield: ShieldAddress): Promise<MetricSample[]> {
  const response = await call(`${shield.origin}/metrics`, { timeoutMs: 10_000 })
  if (response.status !== 200) throw new Error(`/metrics: ${response.status}`)
  return parseMetrics(response.body.toString('utf8'))
}

interface ReadyBody {
  snapshot?: { version?: number; pages?: number }
  sync?: { running?: boolean; lastMode?: string; lastError?: unknown }
}

/**
 * Waits until no sync runs and none has started for a second (a PURGE's refresh waits out
 * REFRESH_DEBOUNCE before it counts as running, so "not running" alone is not enough).
 */
export async function shieldIdle(shield: ShieldAddress, timeoutMs: number): Promise<void> {
  let quietSince: number | undefined
  let lastRuns = Number.NaN
  await waitFor('cms-shield sync idle', timeoutMs, 200, async () => {
    const ready = await getJson<ReadyBody>(`${shield.origin}/readyz`)
    const runs = metricSum(await shieldMetrics(shield), 'cms_shield_sync_runs_total')
    if (ready.sync?.running !== false || runs !== lastRuns) {
      lastRuns = runs
      quietSince = undefined
      return undefined
    }
    quietSince ??= Date.now()
    return Date.now() - quietSince >= 1_000 ? true : undefined
  })
}

/** Runs `trigger`, then waits until cms-shield has finished one more sync than before. */
export async function afterOneSync(shield: ShieldAddress, timeoutMs: number, trigger: () => Promise<void>): Promise<number> {
  const runs = (samples: MetricSample[]): number => metricSum(samples, 'cms_shield_sync_runs_total')
  const before = runs(await shieldMetrics(shield))
  const started = performance.now()
  await trigger()
  await waitFor('a sync to finish', timeoutMs, 50, async () => (runs(await shieldMetrics(shield)) > before ? true : undefined))
  return performance.now() - started
}
