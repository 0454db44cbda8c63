/**
 * Sizes for environment variables: `512kb`, `64mb`, `1gb`, `1.5mb`, or a plain number of bytes.
 *
 * Units are binary (1kb = 1024 bytes), as in nginx and the `bytes` package operators already
 * know; `kib`/`mib`/`gib` are accepted as synonyms. Units are case-insensitive (`64MB`).
 * @module
 */

const UNIT_BYTES = { gb: 1024 ** 3, mb: 1024 ** 2, kb: 1024, b: 1 } as const
type Unit = keyof typeof UNIT_BYTES

const SIZE = /^(\d+(?:\.\d+)?)\s*(?:(b|kb|mb|gb)|(kib|mib|gib))?$/i

/**
 * Parses a size into whole bytes (fractions rounded down), or `undefined` when `text` is not one.
 * Never throws.
 *
 * @example
 * parseBytes('64mb')  // 67_108_864
 * parseBytes('512kb') // 524_288
 * parseBytes('1000')  // 1_000
 */
export function parseBytes(text: string): number | undefined {
  const match = SIZE.exec(text.trim())
  if (match === null) return undefined
  const [, amount, unit, iecUnit] = match
  const normalized = (unit ?? (iecUnit === undefined ? 'b' : `${iecUnit[0]}b`)).toLowerCase() as Unit
  const bytes = Math.floor(Number(amount) * UNIT_BYTES[normalized])
  return Number.isSafeInteger(bytes) ? bytes : undefined
}

/** Writes bytes in the largest unit that divides them exactly (`67108864` → `"64mb"`), for docs. */
export function formatBytes(bytes: number): string {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`formatBytes: expected a whole number of bytes, got ${bytes}`)
  for (const [unit, size] of Object.entries(UNIT_BYTES)) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`
  }
  return `${bytes}b`
}
