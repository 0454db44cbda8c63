/**
 * The benchmark's configuration: every `BENCH_*` variable, read and checked once (a bad value
 * exits with status 2 and says which), and the constants the scenarios share.
 * See bench/README.md, "Variables".
 * @module
 */
import { join } from 'node:path'
import type { BaselineHeaderSet } from './canned-response.js'

export const SCENARIOS = ['detail', 'seed', 'list', 'readthrough', '304', 'wrk', 'headers', 'logging', 'cold', 'sync', 'large', 'frontend', 'flood', 'edits', 'purge', 'sync-cpu', 'sync-cost'] as const
export type ScenarioId = (typeof SCENARIOS)[number]

function envNumber(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min || value > max) {
    process.stderr.write(`bench: ${name}=${JSON.stringify(raw)}: expected a number from ${min} to ${max}\n`)
    process.exit(2)
  }
  return value
}

/** `BENCH_SHIELD_ENV="FAST_PATH=false RENDER_CACHE_MAX_BYTES=1mb"`: extra variables for every cms-shield started. */
function envShieldExtras(): Record<string, string> {
  const raw = process.env.BENCH_SHIELD_ENV?.trim()
  const extras: Record<string, string> = {}
  if (raw === undefined || raw === '') return extras
  for (const pair of raw.split(/[\s,]+/).filter((part) => part !== '')) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair)
    if (!match) {
      process.stderr.write(`bench: BENCH_SHIELD_ENV: ${JSON.stringify(pair)} is not NAME=value\n`)
      process.exit(2)
    }
    extras[match[1] as string] = match[2] as string
  }
  return extras
}

/** `BENCH_SHIELD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/p"`: Node flags for every cms-shield started (flags NODE_OPTIONS refuses). */
function envShieldNodeArgs(): string[] {
  const args = (process.env.BENCH_SHIELD_NODE_ARGS ?? '').split(/\s+/).filter((arg) => arg !== '')
  const bad = args.find((arg) => !arg.startsWith('-'))
  if (bad !== undefined) {
    process.stderr.write(`bench: BENCH_SHIELD_NODE_ARGS: ${JSON.stringify(bad)} is not a flag\n`)
    process.exit(2)
  }
  return args
}

/**
 * A comma-separated choice among `known` (`what` names one in the error): all of them when the
 * variable is unset or empty; an unknown name exits with status 2.
 */
function envChoice<T extends string>(name: string, known: readonly T[], what: string): T[] {
  const raw = process.env[name]?.trim()
  if (raw === undefined || raw === '') return [...known]
  const chosen = raw.split(',').map((part) => part.trim()).filter((part) => part !== '')
  const unknown = chosen.find((each) => !(known as readonly string[]).includes(each))
  if (unknown !== undefined || chosen.length === 0) {
    process.stderr.write(`bench: ${name}: unknown ${what} ${JSON.stringify(unknown ?? raw)}; known: ${known.join(', ')}\n`)
    process.exit(2)
  }
  return known.filter((each) => chosen.includes(each))
}

/** The `wrk` scenario's rows, in the order they run. */
export const WRK_ROWS = ['detail', 'seed', '304'] as const


function envPin(): 'auto' | 'off' {
  const raw = process.env.BENCH_PIN?.trim() || 'auto'
  if (raw !== 'auto' && raw !== 'off') {
    process.stderr.write(`bench: BENCH_PIN=${JSON.stringify(raw)}: expected auto or off\n`)
    process.exit(2)
  }
  return raw
}

function envBaselineHeaders(): BaselineHeaderSet {
  const raw = process.env.BENCH_BASELINE_HEADERS?.trim() || 'same'
  if (raw !== 'minimal' && raw !== 'same') {
    process.stderr.write(`bench: BENCH_BASELINE_HEADERS=${JSON.stringify(raw)}: expected minimal or same\n`)
    process.exit(2)
  }
  return raw
}

function envOnOff(name: string, fallback: boolean): boolean {
  const raw = process.env[name]?.trim()
  if (!raw) return fallback
  if (raw !== 'on' && raw !== 'off') {
    process.stderr.write(`bench: ${name}=${JSON.stringify(raw)}: expected on or off\n`)
    process.exit(2)
  }
  return raw === 'on'
}

/** A comma-separated list of page counts, each from 2 to 1,000,000. */
function envPageCounts(name: string, fallback: number[]): number[] {
  const raw = process.env[name]?.trim()
  if (!raw) return fallback
  const counts = raw.split(',').map((part) => Number(part.trim()))
  if (counts.some((n) => !Number.isInteger(n) || n < 2 || n > 1_000_000)) {
    process.stderr.write(`${name}: page counts from 2 to 1000000, comma-separated, got ${raw}\n`)
    process.exit(2)
  }
  return counts
}

/** Reads every `BENCH_*` variable; exits with status 2 on a bad value. */
export function readConfig() {
  return {
    durationS: envNumber('BENCH_DURATION', 5, 1, 600),
    rounds: Math.round(envNumber('BENCH_ROUNDS', 3, 1, 50)),
    warmupS: envNumber('BENCH_WARMUP', 1, 0, 60),
    connections: Math.round(envNumber('BENCH_CONNECTIONS', 64, 1, 1_000)),
    maxSeconds: envNumber('BENCH_MAX_SECONDS', 600, 10, 86_400),
    pages: Math.round(envNumber('BENCH_PAGES', 1_000, 2, 1_000_000)),
    syncPages: Math.round(envNumber('BENCH_SYNC_PAGES', 10_000, 2, 1_000_000)),
    syncLatencyMs: Math.round(envNumber('BENCH_SYNC_LATENCY_MS', 20, 0, 10_000)),
    largePages: Math.round(envNumber('BENCH_PAGES_LARGE', 100_000, 2, 1_000_000)),
    syncCpuPages: envPageCounts('BENCH_SYNC_CPU_PAGES', [10_000, 100_000]),
    coldClients: Math.round(envNumber('BENCH_COLD_CLIENTS', 200, 1, 2_000)),
    coldDelayMs: Math.round(envNumber('BENCH_COLD_DELAY_MS', 250, 0, 10_000)),
    swapIntervalMs: Math.round(envNumber('BENCH_SWAP_INTERVAL_MS', 500, 50, 60_000)),
    edits: Math.round(envNumber('BENCH_EDITS', 50, 1, 1_000)),
    purgeEdits: Math.round(envNumber('BENCH_PURGE_EDITS', 30, 1, 1_000)),
    flood: {
      seconds: envNumber('BENCH_FLOOD_SECONDS', 30, 2, 600),
      concurrency: Math.round(envNumber('BENCH_FLOOD_CONCURRENCY', 200, 1, 2_000)),
      readers: Math.round(envNumber('BENCH_FLOOD_READERS', 8, 1, 256)),
      latencyMs: Math.round(envNumber('BENCH_FLOOD_LATENCY_MS', 100, 0, 10_000)),
      timeoutMs: Math.round(envNumber('BENCH_FLOOD_TIMEOUT_MS', 5_000, 100, 60_000)),
    },
    // A site build's workers: requests of the `frontend` build in flight at once.
    frontendConcurrency: Math.round(envNumber('BENCH_FRONTEND_CONCURRENCY', 8, 1, 256)),
    quietWaitS: envNumber('BENCH_QUIET_WAIT', 20, 0, 600),
    only: new Set(envChoice('BENCH_ONLY', SCENARIOS, 'scenario')),
    // Only some of the `wrk` scenario's rows: more rounds of one row in the same time.
    wrkRows: envChoice('BENCH_WRK_ROWS', WRK_ROWS, 'row'),
    shieldEnv: envShieldExtras(),
    shieldNodeArgs: envShieldNodeArgs(),
    baselineHeaders: envBaselineHeaders(),
    // The detail row also measures a cms-shield with PRIVATE_APIS=false: what the public paths cost.
    publicApis: envOnOff('BENCH_PUBLIC_APIS', false),
    pin: envPin(),
    out: process.env.BENCH_OUT?.trim() || join('bench', 'results', 'latest.json'),
    // Keep every cms-shield's log after a complete run too (an incomplete run always keeps them).
    keepLogs: process.env.BENCH_KEEP_LOGS?.trim() === '1',
  }
}

export type BenchConfig = ReturnType<typeof readConfig>

/** The fake Wagtail's largest page size (WAGTAILAPI_LIMIT_MAX), which the sync walks the listing with. */
export const ORIGIN_PAGE_SIZE = 250
/** cms-shield's default SYNC_CONCURRENCY: the benchmark leaves it at its default. */
export const SYNC_CONCURRENCY = 8
export const SHIELD_ENTRY = join('dist', 'main.js')
