/**
 * Where refusals wait before they are answered (`read-through-budget.ts`, the client-share hold).
 * A flood holds hundreds of refusals at once: rather than one timer each, the holds that end within
 * the same `slotMs` share one timer, ending together at the slot's end (at most `slotMs` later
 * than asked), so a held refusal costs one entry in an array (docs/performance.md, "Refusals").
 * @module
 */

export interface HoldQueue {
  /** Resolves `ms` from now, or up to `slotMs` after. */
  hold(ms: number): Promise<void>
  /** Holds not ended yet. */
  readonly size: number
}

export interface HoldQueueOptions {
  readonly now: () => number
  readonly timers: { setTimeout(callback: () => void, ms: number): unknown }
  /** Width of a slot (ms): holds ending within one share its timer. */
  readonly slotMs: number
}

export function createHoldQueue(options: HoldQueueOptions): HoldQueue {
  const { now, timers, slotMs } = options
  /** Slot number (its end is `slot × slotMs`) → the holds ending then. */
  const slots = new Map<number, Array<() => void>>()
  let size = 0

  function end(slot: number): void {
    const ending = slots.get(slot)
    slots.delete(slot)
    if (!ending) return
    size -= ending.length
    for (const resolve of ending) resolve()
  }

  return {
    hold(ms) {
      const at = now()
      const slot = Math.ceil((at + Math.max(0, ms)) / slotMs)
      return new Promise<void>((resolve) => {
        let ending = slots.get(slot)
        if (!ending) {
          slots.set(slot, (ending = []))
          timers.setTimeout(() => end(slot), Math.max(0, slot * slotMs - at))
        }
        ending.push(resolve)
        size++
      })
    },
    get size() {
      return size
    },
  }
}
