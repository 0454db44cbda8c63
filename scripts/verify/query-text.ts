/**
 * Writing the corpus's query strings: percent-encoding as a client would, one `key=value` pair,
 * and a path with its query. Pure.
 * @module
 */

const SAFE = /^[A-Za-z0-9\-_.~,:/()*!]$/

/** Percent-encodes UTF-8 except the characters a query may carry raw (`,` `(` `*` stay readable). */
export function enc(text: string): string {
  let out = ''
  for (const ch of text) {
    if (SAFE.test(ch)) out += ch
    else for (const byte of new TextEncoder().encode(ch)) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

export const pair = (key: string, value: string): string => `${enc(key)}=${enc(value)}`

export function listingOf(path: string, query: readonly string[]): string {
  return query.length === 0 ? path : `${path}?${query.join('&')}`
}
