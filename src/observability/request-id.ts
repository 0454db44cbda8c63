/**
 * Request ids: the caller's `X-Request-Id` when it looks like one, else a fresh id; either goes back
 * in the response and into the request's log line.
 *
 * A fresh id is UUID-shaped, version 8 (RFC 9562 §5.8, "custom"): 74 random bits drawn once, then a
 * 48-bit counter. It is as unique as a random UUID across instances (the random part tells
 * processes apart) and within one (the counter), and costs a string join instead of `randomUUID()`,
 * which was a tenth of cms-shield's own work on a cached hit. Ids from one process sort
 * in the order they were given out, which helps reading logs; nothing relies on them being
 * unguessable.
 * @module
 */
import { randomBytes } from 'node:crypto'

/** What an incoming `X-Request-Id` may look like to be kept: short, and nothing a log viewer could misread. */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

const COUNTER_LIMIT = 2 ** 48

export type RequestIds = (header: string | string[] | undefined) => string

/**
 * A source of request ids. `random(n)` gives n random bytes; a new prefix is drawn at start and
 * whenever the counter has run through its 48 bits.
 */
export function createRequestIds(random: (size: number) => Buffer = randomBytes, firstCount = 0): RequestIds {
  let prefix = ''
  let count = COUNTER_LIMIT
  function redraw(): void {
    const hex = random(10).toString('hex')
    // xxxxxxxx-xxxx-8xxx-Vxxx-: version nibble 8, variant bits 10 (RFC 9562 §4.1, §4.2).
    const variant = ((parseInt(hex[15]!, 16) & 0x3) | 0x8).toString(16)
    prefix = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(12, 15)}-${variant}${hex.slice(16, 19)}-`
  }
  redraw()
  count = firstCount
  return (header) => {
    if (typeof header === 'string' && REQUEST_ID.test(header)) return header
    if (count >= COUNTER_LIMIT) {
      redraw()
      count = 0
    }
    return prefix + (count++).toString(16).padStart(12, '0')
  }
}

/** The process's own request ids. */
export const requestIdFrom: RequestIds = createRequestIds()
