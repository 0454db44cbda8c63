/**
 * The soak's verdict and tables. The question is whether anything drifts under steady
 * load: RSS and p99 flat, no leaked timers or sockets. A single sample says little (GC timing moves
 * RSS and heap by tens of MiB; other people's tests on this 2-core machine move p99), so the
 * verdict compares the median of the first third of the windows with the median of the last third,
 * and gives the least-squares slope over all windows as a second opinion. The machine's load
 * average is shown per window and per third, so a p99 rise that only follows the load average can
 * be told apart from drift.
 * @module
 */
import { fmtBytes, fmtInt, fmtMs, markdownTable } from '../../bench/lib/report.js'
import { round } from '../../bench/lib/stats.js'

export interface SoakWindow {
  index: number
  /** Seconds since the measured part started, at the window's end. */
  endS: number
  requests: number
  rps: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** Answers with a status their kind should not get, plus transport errors and timeouts. */
  bad: number
  etagChanged: number
  rssBytes: number | null
  /** Lowest heap in use seen in the window (see probe-window.ts), and the highest. */
  heapFloorBytes: number
  heapPeakBytes: number
  /** Outside the V8 heap: Buffers (bodies in the snapshot and the caches). */
  externalBytes: number
  /** Bytes and entries in the read-through memory tier (cms_shield_cache_bytes / _entries). */
  cacheBytes: number
  cacheEntries: number
  fds: number | null
  sockets: number | null
  activeHandlesTotal: number
  activeResourcesTotal: number
  /** Live timers (the census, shield-census.ts); null when it could not be read. */
  timers: number | null
  /** Ref'd `Timeout` resources by prom-client's default metrics. */
  refedTimeouts: number
  loopLagP99Ms: number
  loopLagMaxMs: number
  syncRuns: number
  /** Of those, syncs that failed (the last good snapshot kept serving). */
  syncFailed: number
  /** Of the failed, those that met an edit in progress (SYNC_INCONSISTENT) and were retried. */
  syncRaced: number
  snapshotVersion: number
  edits: number
  editVisibleMaxMs: number | null
  shieldCores: number | null
  /** CPU cores used on the machine by processes that are not the soak's (other people's tests). */
  foreignCores: number | null
  harnessElu: number
  load1: number
}

export interface DriftCheck {
  name: string
  unit: 'bytes' | 'ms' | 'count'
  firstThird: number
  lastThird: number
  /** lastThird − firstThird. */
  change: number
  /** Change per 10 minutes from the least-squares line over every window. */
  slopePer10Min: number
  limit: string
  flat: boolean
  /** Shown to explain the others; not part of the verdict. */
  informational: boolean
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** Least-squares slope of value over x. */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length
  if (n < 2) return 0
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i++) {
    num += ((xs[i] as number) - mx) * ((ys[i] as number) - my)
    den += ((xs[i] as number) - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

/** First and last third of the windows (at least one each). */
export function thirds<T>(windows: readonly T[]): { first: T[]; last: T[] } {
  const size = Math.max(1, Math.floor(windows.length / 3))
  return { first: windows.slice(0, size), last: windows.slice(windows.length - size) }
}

type Limit = { kind: 'ratio'; max: number } | { kind: 'absolute'; max: number } | { kind: 'none' }

function drift(
  windows: readonly SoakWindow[],
  name: string,
  unit: DriftCheck['unit'],
  value: (window: SoakWindow) => number | null,
  limit: Limit,
): DriftCheck {
  const points = windows.filter((window) => value(window) !== null)
  const { first, last } = thirds(points)
  const firstThird = median(first.map((window) => value(window) as number))
  const lastThird = median(last.map((window) => value(window) as number))
  const change = lastThird - firstThird
  const perS = slope(points.map((window) => window.endS), points.map((window) => value(window) as number))
  const flat = limit.kind === 'none' ? true : limit.kind === 'ratio' ? lastThird <= firstThird * limit.max : change <= limit.max
  const limitText = limit.kind === 'none'
    ? 'none (explains the rows above)'
    : limit.kind === 'ratio'
      ? `last ≤ ${limit.max}× first`
      : `growth ≤ ${unit === 'bytes' ? fmtBytes(limit.max) : String(limit.max)}`
  return {
    name, unit, firstThird: round(firstThird, 3), lastThird: round(lastThird, 3), change: round(change, 3),
    slopePer10Min: round(perS * 600, 3), limit: limitText, flat, informational: limit.kind === 'none',
  }
}

/** The limits a soak must stay within to count as flat. */
export const LIMITS = {
  rssRatio: 1.1,
  heapRatio: 1.2,
  externalRatio: 1.2,
  p99Ratio: 1.5,
  descriptors: 5,
  handles: 5,
  timers: 3,
} as const

export function driftChecks(windows: readonly SoakWindow[]): DriftCheck[] {
  return [
    drift(windows, 'RSS', 'bytes', (w) => w.rssBytes, { kind: 'ratio', max: LIMITS.rssRatio }),
    drift(windows, 'heap in use (floor)', 'bytes', (w) => w.heapFloorBytes, { kind: 'ratio', max: LIMITS.heapRatio }),
    drift(windows, 'external memory (Buffers)', 'bytes', (w) => w.externalBytes, { kind: 'ratio', max: LIMITS.externalRatio }),
    drift(windows, 'read-through memory tier', 'bytes', (w) => w.cacheBytes, { kind: 'none' }),
    drift(windows, 'p99 latency', 'ms', (w) => w.p99Ms, { kind: 'ratio', max: LIMITS.p99Ratio }),
    drift(windows, 'open fds', 'count', (w) => w.fds, { kind: 'absolute', max: LIMITS.descriptors }),
    drift(windows, 'sockets', 'count', (w) => w.sockets, { kind: 'absolute', max: LIMITS.descriptors }),
    drift(windows, 'active handles', 'count', (w) => w.activeHandlesTotal, { kind: 'absolute', max: LIMITS.handles }),
    drift(windows, 'active resources', 'count', (w) => w.activeResourcesTotal, { kind: 'absolute', max: LIMITS.handles }),
    drift(windows, 'live timers', 'count', (w) => w.timers, { kind: 'absolute', max: LIMITS.timers }),
  ]
}

export function fmtValue(check: DriftCheck, value: number): string {
  if (check.unit === 'bytes') return fmtBytes(value)
  if (check.unit === 'ms') return fmtMs(value)
  return String(round(value, 1))
}

function fmtChange(check: DriftCheck, value: number): string {
  const sign = value > 0 ? '+' : value < 0 ? '−' : '±'
  return `${sign}${fmtValue(check, Math.abs(value))}`
}

export function driftTable(checks: readonly DriftCheck[]): string {
  return markdownTable(
    ['measure', 'first third (median)', 'last third (median)', 'change', 'trend per 10 min', 'limit', 'flat?'],
    checks.map((check) => [
      check.name,
      fmtValue(check, check.firstThird),
      fmtValue(check, check.lastThird),
      `${fmtChange(check, check.change)}${check.unit !== 'count' && check.firstThird > 0 ? ` (${check.change >= 0 ? '+' : ''}${((check.change / check.firstThird) * 100).toFixed(1)}%)` : ''}`,
      fmtChange(check, check.slopePer10Min),
      check.limit,
      check.informational ? '—' : check.flat ? 'yes' : 'NO',
    ]),
  )
}

const mib = (bytes: number | null): string => (bytes === null ? '—' : (bytes / 1024 ** 2).toFixed(1))

export function windowTable(windows: readonly SoakWindow[]): string {
  return markdownTable(
    ['#', 't (s)', 'req/s', 'p50', 'p99', 'max', 'bad', 'RSS MiB', 'heap floor–peak MiB', 'external MiB', 'read-through cache', 'fds', 'sockets', 'handles', 'resources', 'timers', 'loop lag p99 / max', 'syncs', 'snapshot', 'edits', 'edit → served max', 'shield cores', 'other cores', 'load1'],
    windows.map((w) => [
      String(w.index + 1),
      String(Math.round(w.endS)),
      fmtInt(w.rps),
      fmtMs(w.p50Ms),
      fmtMs(w.p99Ms),
      fmtMs(w.maxMs, 0),
      String(w.bad),
      mib(w.rssBytes),
      `${mib(w.heapFloorBytes)}–${mib(w.heapPeakBytes)}`,
      mib(w.externalBytes),
      `${mib(w.cacheBytes)} MiB / ${w.cacheEntries}`,
      String(w.fds ?? '—'),
      String(w.sockets ?? '—'),
      String(w.activeHandlesTotal),
      String(w.activeResourcesTotal),
      String(w.timers ?? '—'),
      `${w.loopLagP99Ms.toFixed(0)} / ${w.loopLagMaxMs.toFixed(0)} ms`,
      w.syncFailed === 0 ? String(w.syncRuns) : `${w.syncRuns} (${w.syncFailed} failed)`,
      `v${w.snapshotVersion}`,
      String(w.edits),
      w.editVisibleMaxMs === null ? '—' : fmtMs(w.editVisibleMaxMs, 0),
      w.shieldCores === null ? '—' : w.shieldCores.toFixed(2),
      w.foreignCores === null ? '—' : w.foreignCores.toFixed(2),
      w.load1.toFixed(2),
    ]),
  )
}
