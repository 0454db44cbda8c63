/**
 * A part the composition root builds after the parts that read it (`app.ts`, phase 2): the
 * server's options read the fast path built on the server, the sync reads the cluster built
 * from the sync. Reading one before it is set throws an error naming it, instead of a closure
 * reading a `const` that is not initialised yet.
 * @module
 */

export interface Late<T> {
  /** The part; throws, naming it, before {@link Late.set}. */
  get(): T
  /** Sets the part once. */
  set(value: T): void
  readonly isSet: boolean
}

export function late<T>(name: string): Late<T> {
  let value: T
  let isSet = false
  return {
    get() {
      if (!isSet) throw new Error(`${name} was read before the composition root connected it (app.ts, phase 2)`)
      return value
    },
    set(next) {
      if (isSet) throw new Error(`${name} was connected twice`)
      value = next
      isSet = true
    },
    get isSet() {
      return isSet
    },
  }
}

/** Throws, naming them, unless every part was set: the end of phase 2. */
export function assertConnected(parts: Readonly<Record<string, Late<unknown>>>): void {
  const missing = Object.entries(parts).filter(([, part]) => !part.isSet).map(([name]) => name)
  if (missing.length > 0) throw new Error(`not connected: ${missing.join(', ')}`)
}
