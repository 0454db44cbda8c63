/**
 * How reading a stored snapshot or patch says no: a refusal with its reason, never a throw.
 * @module
 */

export type Refusal = { readonly ok: false; readonly reason: string }

export function refuse(reason: string): Refusal {
  return { ok: false, reason }
}

/** What was caught, as a reason. */
export function describe(caught: unknown): string {
  return caught instanceof Error ? caught.message : String(caught)
}
