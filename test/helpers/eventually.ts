/**
 * Polls `check` every 20 ms until it holds, and fails naming `what` once `withinMs` has passed:
 * tests wait for what the system does on its own (a swap, a purge, a hit counted) without fixed
 * sleeps, and a broken promise still fails within a bound. Resolves with the milliseconds it took.
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, withinMs = 10_000): Promise<number> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`${what}: not within ${withinMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return Date.now() - started
}
