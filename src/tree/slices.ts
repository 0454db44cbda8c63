/**
 * Long passes over every page, cut into slices so that requests are answered between them. On a
 * large tree one pass of a sync (planning, carrying pages over, building, comparing) in one block
 * holds up every request that arrives meanwhile (the slowest answers suffer while snapshots swap,
 * docs/performance.md, "What a swap costs readers"). A pass is written once, as a generator that yields between slices, and
 * run either to the end at once (tests, small trees) or with an injected `pause` between slices.
 * @module
 */

/** Gives the event loop back (the sync passes one `setImmediate` turn; tests a resolved promise). */
export type Pause = () => Promise<void>

/** The steps of a pass: each `yield` is a point where the event loop may be given back. */
export type Steps<T> = Generator<void, T>

/** Pages one slice handles: a few milliseconds of work at most for any pass here. */
export const SLICE = 2_048

/**
 * Runs `work` over `[0, length)` one slice at a time, yielding between slices. The loops live in
 * `work`, a plain function, because V8 optimises a long loop inside a generator poorly.
 */
export function* inSlices(length: number, work: (from: number, to: number) => void): Steps<void> {
  for (let from = 0; from < length; from += SLICE) {
    work(from, Math.min(length, from + SLICE))
    if (from + SLICE < length) yield
  }
}

/** Runs every step at once. */
export function runToEnd<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
  }
}

/** Runs the steps, awaiting `pause` between them. */
export async function runWithPauses<T>(steps: Steps<T>, pause: Pause): Promise<T> {
  for (;;) {
    const step = steps.next()
    if (step.done) return step.value
    await pause()
  }
}
