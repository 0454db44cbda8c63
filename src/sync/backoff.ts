/**
 * Delay before the next sync after `failures` failed ones in a row: exponential from one second,
 * capped, with "equal jitter" (half fixed, half random) so that many instances started together
 * do not retry in lockstep, yet none retries almost at once.
 * @module
 */
export function syncRetryDelay(failures: number, capMs: number, random: () => number): number {
  const exponential = Math.min(capMs, 1000 * 2 ** Math.max(0, Math.min(failures - 1, 30)))
  return Math.round(exponential / 2 + (random() * exponential) / 2)
}
