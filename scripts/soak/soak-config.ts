/**
 * The soak's settings, from the environment (a bounded, steady load, edits every
 * few seconds). Durations read like cms-shield's own (`10m`, `3s`, `500ms`; a bare number is
 * seconds). A bad value stops the run at once with exit code 2, before anything is started.
 * @module
 */
import { join } from 'node:path'

export interface SoakConfig {
  /** Measured time: the windows, after the warm-up. */
  readonly durationMs: number
  /** Requests per second, all lanes together (a fixed rate, not maximum throughput). */
  readonly rate: number
  readonly editEveryMs: number
  readonly windowMs: number
  /** Load and edits before the first window, so start-up (JIT, first heap growth) is not counted as drift. */
  readonly warmupMs: number
  /** Pages of the generated site the origin serves. */
  readonly pages: number
  /** Extra variables for cms-shield, `NAME=value` pairs. */
  readonly shieldEnv: Readonly<Record<string, string>>
  readonly out: string
  /** Everything, start-up and shutdown included, ends by then: duration + 2 minutes. */
  readonly deadlineMs: number
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }

export class SoakConfigError extends Error {}

/** `10m` → 600000; a bare number is seconds. */
export function parseDurationMs(name: string, raw: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim())
  if (!match) throw new SoakConfigError(`${name}=${JSON.stringify(raw)}: expected a duration such as 10m, 30s or 500ms`)
  return Math.round(Number(match[1]) * (UNITS[match[2] ?? 's'] as number))
}

function duration(env: NodeJS.ProcessEnv, name: string, fallback: string, minMs: number, maxMs: number): number {
  const raw = env[name]?.trim() || fallback
  const ms = parseDurationMs(name, raw)
  if (ms < minMs || ms > maxMs) throw new SoakConfigError(`${name}=${JSON.stringify(raw)}: expected from ${minMs} ms to ${maxMs} ms`)
  return ms
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new SoakConfigError(`${name}=${JSON.stringify(raw)}: expected an integer from ${min} to ${max}`)
  return value
}

/** `SOAK_SHIELD_ENV="FULL_SYNC_INTERVAL=5m CACHE_TTL=1s"`, like bench's BENCH_SHIELD_ENV. */
function shieldExtras(env: NodeJS.ProcessEnv): Record<string, string> {
  const extras: Record<string, string> = {}
  for (const pair of (env.SOAK_SHIELD_ENV ?? '').split(/[\s,]+/).filter((part) => part !== '')) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair)
    if (!match) throw new SoakConfigError(`SOAK_SHIELD_ENV: ${JSON.stringify(pair)} is not NAME=value`)
    extras[match[1] as string] = match[2] as string
  }
  return extras
}

/** Slack for start-up (origin, first sync), the final idle sample and shutdown, on top of the measured time. */
export const DEADLINE_SLACK_MS = 120_000

export function loadSoakConfig(env: NodeJS.ProcessEnv): SoakConfig {
  const durationMs = duration(env, 'SOAK_DURATION', '10m', 10_000, 24 * 3_600_000)
  const windowMs = duration(env, 'SOAK_WINDOW', '30s', 2_000, 3_600_000)
  if (durationMs < 3 * windowMs) throw new SoakConfigError(`SOAK_DURATION must hold at least 3 windows of SOAK_WINDOW (${windowMs} ms): the verdict compares thirds`)
  // The warm-up comes out of the slack, never out of the measured time.
  const warmupMs = duration(env, 'SOAK_WARMUP', '20s', 0, 60_000)
  return {
    durationMs,
    rate: integer(env, 'SOAK_RATE', 1_500, 10, 100_000),
    editEveryMs: duration(env, 'SOAK_EDIT_EVERY', '3s', 200, 3_600_000),
    windowMs,
    warmupMs,
    pages: integer(env, 'SOAK_PAGES', 1_000, 50, 200_000),
    shieldEnv: shieldExtras(env),
    out: env.SOAK_OUT?.trim() || join('bench', 'results', 'soak-latest.json'),
    deadlineMs: durationMs + DEADLINE_SLACK_MS,
  }
}
