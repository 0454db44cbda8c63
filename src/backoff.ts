/**
 * How long to wait before trying again after failures in a row: the one exponential backoff, with
 * the two ways of spreading it that cms-shield uses. Pure; a foundation module like `timers.ts`,
 * so every layer that retries (the upstream client, the sync, the CDN purges) uses this one.
 * @module
 */

/** `baseMs · 2^attempt`, at most `capMs`; `attempt` is 0 for the first retry. */
export function backoffCeiling(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, Math.min(attempt, 30)))
}

/**
 * "Full jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"): uniform in
 * [0, ceiling), so that instances retrying after the same hiccup spread out instead of arriving
 * together. For short waits inside one request, where retrying at once is fine.
 */
export function fullJitterDelay(attempt: number, baseMs: number, capMs: number, random: () => number): number {
  return Math.floor(random() * backoffCeiling(attempt, baseMs, capMs))
}

/**
 * "Equal jitter": half the ceiling fixed, half random, so that many instances started together
 * do not retry in lockstep, yet none retries almost at once.
 */
export function equalJitterDelay(attempt: number, baseMs: number, capMs: number, random: () => number): number {
  const ceiling = backoffCeiling(attempt, baseMs, capMs)
  return Math.round(ceiling / 2 + (random() * ceiling) / 2)
}

/**
 * Delay before the next try after `failures` failed ones in a row (a sync, a CDN purge):
 * {@link equalJitterDelay} from one second, capped at `capMs`.
 */
export function retryDelay(failures: number, capMs: number, random: () => number): number {
  return equalJitterDelay(failures - 1, 1000, capMs, random)
}
