/**
 * Human durations for environment variables: `250ms`, `30s`, `5m`, `1h`, `1h30m`, `1.5s`.
 *
 * A bare number means **seconds** (`SYNC_INTERVAL=60` is a minute), because that is what an
 * operator writing a timeout by hand almost always means; milliseconds need their unit.
 * @module
 */

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const
type Unit = keyof typeof UNIT_MS

/** Largest unit first: the order segments must appear in, and the order `formatDuration` writes. */
const UNITS_DESCENDING: readonly Unit[] = ['h', 'm', 's', 'ms']

// `ms` must be tried before `m` and `s`; whitespace between segments allows "1h 30m".
const SEGMENT = /(\d+(?:\.\d+)?)(ms|h|m|s)\s*/y
const BARE_NUMBER = /^\d+(?:\.\d+)?$/

/**
 * Parses a duration into whole milliseconds (rounded), or `undefined` when `text` is not one.
 *
 * Rejected: empty text, signs (no negative durations), unknown units, a unit written twice or out
 * of order (`30m1h` is more likely a typo than a wish), and values beyond `Number.MAX_SAFE_INTEGER` ms.
 * Never throws, whatever the input.
 *
 * @example
 * parseDuration('1h30m') // 5_400_000
 * parseDuration('1.5s')  // 1_500
 * parseDuration('60')    // 60_000 (bare number = seconds)
 * parseDuration('-5s')   // undefined
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim()
  if (trimmed === '') return undefined
  if (BARE_NUMBER.test(trimmed)) return toSafeMs(Number(trimmed) * UNIT_MS.s)

  let total = 0
  let position = 0
  let lastRank = -1
  while (position < trimmed.length) {
    SEGMENT.lastIndex = position
    const match = SEGMENT.exec(trimmed)
    if (match === null) return undefined
    const unit = match[2] as Unit
    const rank = UNITS_DESCENDING.indexOf(unit)
    if (rank <= lastRank) return undefined
    lastRank = rank
    total += Number(match[1]) * UNIT_MS[unit]
    position = SEGMENT.lastIndex
  }
  return toSafeMs(total)
}

function toSafeMs(ms: number): number | undefined {
  const rounded = Math.round(ms)
  return Number.isSafeInteger(rounded) ? rounded : undefined
}

/**
 * Writes milliseconds the way an operator would (`90000` → `"1m30s"`, `250` → `"250ms"`,
 * `0` → `"0s"`); `parseDuration(formatDuration(ms)) === ms` for every whole `ms >= 0`.
 * Used for documentation and log lines; throws on negative or non-finite input.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`formatDuration: expected a non-negative duration, got ${ms}`)
  let rest = Math.round(ms)
  if (rest === 0) return '0s'
  let out = ''
  for (const unit of UNITS_DESCENDING) {
    // `%` is exact on doubles, where `Math.floor(rest / size)` can round up near 2^53.
    const remainder = rest % UNIT_MS[unit]
    const count = (rest - remainder) / UNIT_MS[unit]
    if (count > 0) out += `${count}${unit}`
    rest = remainder
  }
  return out
}
