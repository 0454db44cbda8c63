/**
 * Parsing of one environment value by its kind, and the words that describe what was expected.
 * Pure: `load-config.ts` collects the problems, this module only judges one value.
 * @module
 */

import { formatBytes, parseBytes } from './bytes.js'
import { parseCidrList, type AddressList } from './cidr.js'
import { formatDuration, parseDuration } from './duration.js'
import type { NumberVariable, PercentVariable, Variable } from './schema.js'

/**
 * Upper bound of every duration unless its variable says otherwise: Node fires a timer longer
 * than 2^31-1 ms (about 24.8 days) at once, with only a warning, so a "very long" interval would
 * turn into a busy loop. A week is far beyond any sensible setting and well inside the limit.
 */
export const DURATION_MAX_MS = 7 * 24 * 3_600_000

const INTEGER = /^[+-]?\d+$/
const BOOLEANS: Readonly<Record<string, boolean>> = {
  true: true, false: false, '1': true, '0': false, yes: true, no: false, on: true, off: false,
}

/** `reason`, when given, replaces the generic "expected …" of the problem line. */
export type ParseResult =
  | { readonly ok: true; readonly value: string | number | boolean | AddressList | readonly string[] }
  | { readonly ok: false; readonly reason?: string }

const invalid: ParseResult = { ok: false }

/** Parses `text` (already trimmed, non-empty) as `variable` wants it. */
export function parseValue(variable: Variable, text: string): ParseResult {
  switch (variable.kind) {
    case 'url': return parseHttpUrl(text)
    case 'urls': return parseUrlList(text)
    case 'string': return { ok: true, value: text }
    case 'path': return parseMountPath(text)
    case 'name': return ROUTER_NAME.test(text) ? { ok: true, value: text } : invalid
    case 'names': return parseNames(text)
    case 'hosts': return parseHosts(text)
    case 'enum': {
      // LOG_LEVEL=INFO is an obvious intent; values are canonical in lower case.
      const value = text.toLowerCase()
      return variable.values.includes(value) ? { ok: true, value } : invalid
    }
    case 'bool': {
      const value = BOOLEANS[text.toLowerCase()]
      return value === undefined ? invalid : { ok: true, value }
    }
    case 'int': return withinLimits(variable, INTEGER.test(text) ? Number(text) : undefined)
    case 'bytes': return withinLimits(variable, parseBytes(text))
    case 'duration': return withinLimits(variable, parseDuration(text))
    case 'set': return parseSet(variable.values, text)
    case 'percent': return parsePercent(variable, text)
    case 'cidrs': {
      const parsed = parseCidrList(text)
      return parsed.ok ? { ok: true, value: parsed.list } : { ok: false, reason: parsed.reason }
    }
  }
}

/** A name Django's `path('<name>/', …)` can route to without escaping, and not a view of its own. */
const ROUTER_NAME = /^(?!find$)[A-Za-z0-9_-]+$/
const PATH_SEGMENT = /^[A-Za-z0-9._~-]+$/

/**
 * A URL path of plain segments, given with or without its slashes (`api/v2` means `/api/v2/`).
 * Dot segments and escapes are refused: a request's path is compared byte for byte with it.
 */
function parseMountPath(text: string): ParseResult {
  const segments = text.replace(/^\/+|\/+$/g, '').split('/')
  if (segments.some((segment) => !PATH_SEGMENT.test(segment) || segment === '.' || segment === '..')) return invalid
  return { ok: true, value: `/${segments.join('/')}/` }
}

/** Comma-separated router names; `none` for none; each at most once. */
function parseNames(text: string): ParseResult {
  if (text.toLowerCase() === 'none') return { ok: true, value: [] }
  const names = text.split(',').map((part) => part.trim()).filter((part) => part !== '')
  const bad = names.find((name) => !ROUTER_NAME.test(name))
  if (bad !== undefined) return { ok: false, reason: `expected ${KIND_WORDS.names}; ${JSON.stringify(bad.slice(0, 100))} is not one` }
  if (new Set(names).size !== names.length) return { ok: false, reason: 'names an endpoint twice' }
  return names.length === 0 ? invalid : { ok: true, value: names }
}

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/

/** Comma-separated DNS hostnames, lower-cased (hostnames compare without case); `none` for none. */
function parseHosts(text: string): ParseResult {
  if (text.toLowerCase() === 'none') return { ok: true, value: [] }
  const hosts = text.toLowerCase().split(',').map((part) => part.trim()).filter((part) => part !== '')
  const bad = hosts.find((host) => !HOSTNAME.test(host))
  if (bad !== undefined) return { ok: false, reason: `expected ${KIND_WORDS.hosts}; ${JSON.stringify(bad.slice(0, 100))} is not one` }
  if (new Set(hosts).size !== hosts.length) return { ok: false, reason: 'names a host twice' }
  return hosts.length === 0 ? invalid : { ok: true, value: hosts }
}

function parseSet(values: readonly string[], text: string): ParseResult {
  const lower = text.toLowerCase()
  const asBool = BOOLEANS[lower]
  if (lower === 'none' || asBool === false) return { ok: true, value: [] }
  if (asBool === true) return { ok: true, value: [...values] }
  const named = lower.split(',').map((part) => part.trim()).filter((part) => part !== '')
  if (named.length === 0 || named.some((name) => !values.includes(name))) return invalid
  return { ok: true, value: values.filter((value) => named.includes(value)) }
}

function withinLimits(variable: NumberVariable, value: number | undefined): ParseResult {
  if (value === undefined || !Number.isSafeInteger(value)) return invalid
  const { min, max } = limitsOf(variable)
  if (min !== undefined && value < min) return invalid
  if (max !== undefined && value > max) return invalid
  return { ok: true, value }
}

const PERCENT = /^(\d+(?:\.\d+)?)%$/

/** `5%` or `0.5%` (a fraction: 0.05, 0.005), or a plain `0`. */
function parsePercent(variable: PercentVariable, text: string): ParseResult {
  const value = text === '0' ? 0 : Number(PERCENT.exec(text)?.[1] ?? Number.NaN) / 100
  if (!Number.isFinite(value)) return invalid
  if ((variable.min !== undefined && value < variable.min) || (variable.max !== undefined && value > variable.max)) return invalid
  return { ok: true, value }
}

function limitsOf(variable: NumberVariable): { min: number | undefined; max: number | undefined } {
  const max = variable.max ?? (variable.kind === 'duration' ? DURATION_MAX_MS : undefined)
  return { min: variable.min, max }
}

/**
 * Base URLs are concatenated with API paths, so anything after the path would land in the middle
 * of a request line; credentials are refused because nothing may ever send them (and they would
 * end up in logs).
 */
function parseHttpUrl(text: string): ParseResult {
  if (text.includes('?') || text.includes('#')) return invalid
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return invalid
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return invalid
  if (url.username !== '' || url.password !== '' || url.hostname === '') return invalid
  return { ok: true, value: url.href.replace(/\/+$/, '') }
}

/** Comma-separated `url`s; blanks between commas are ignored, one bad entry spoils the list. */
function parseUrlList(text: string): ParseResult {
  const urls: string[] = []
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue
    const parsed = parseHttpUrl(entry.trim())
    if (!parsed.ok) return { ok: false, reason: `expected ${KIND_WORDS.urls}; ${JSON.stringify(entry.trim().slice(0, 100))} is not one` }
    urls.push(parsed.value as string)
  }
  return urls.length === 0 ? invalid : { ok: true, value: urls }
}

/** The allowed range or values, in the variable's own unit (`1–64`, `at least 1s`, …), if any. */
export function describeLimits(variable: Variable): string | undefined {
  if (variable.kind === 'enum') return `one of ${variable.values.join(', ')}`
  if (variable.kind === 'set') return `${variable.values.join(', ')} (comma-separated), or none`
  if (variable.kind === 'percent') return `${(variable.min ?? 0) * 100}% to ${(variable.max ?? 1) * 100}%`
  if (variable.kind !== 'int' && variable.kind !== 'bytes' && variable.kind !== 'duration') return undefined
  const { min, max } = limitsOf(variable)
  const show = (n: number): string =>
    variable.kind === 'duration' ? formatDuration(n) : variable.kind === 'bytes' ? formatBytes(n) : String(n)
  if (min !== undefined && max !== undefined) return `${show(min)} to ${show(max)}`
  if (min !== undefined) return `at least ${show(min)}`
  if (max !== undefined) return `at most ${show(max)}`
  return undefined
}

const KIND_WORDS: Readonly<Record<Variable['kind'], string>> = {
  url: 'an http(s) URL without credentials, query or fragment',
  urls: 'http(s) URLs without credentials, query or fragment, comma-separated',
  string: 'a non-empty string',
  path: 'a URL path of plain segments such as /api/v2/',
  name: 'a router name of letters, digits, _ and - (not find)',
  names: 'router names of letters, digits, _ and - (not find), comma-separated, or none',
  hosts: 'hostnames without a port, such as partner.example.com, comma-separated, or none',
  enum: 'a value',
  int: 'a whole number',
  bytes: 'a size such as 512kb, 64mb or 1gb',
  duration: 'a duration such as 250ms, 30s, 5m or 1h30m',
  bool: 'true or false',
  set: 'some of a list of names',
  percent: 'a percentage such as 5% or 0.5%, or 0',
  cidrs: 'CIDRs such as 10.0.0.0/8 or ::1/128, comma-separated, or none',
}

/** "expected …" text of a problem line, e.g. `a whole number from 0 to 65535`. */
export function describeExpected(variable: Variable): string {
  const limits = describeLimits(variable)
  if (variable.kind === 'enum' || variable.kind === 'set') return limits ?? KIND_WORDS[variable.kind]
  if (limits === undefined) return KIND_WORDS[variable.kind]
  const range = limits.startsWith('at ') ? limits : `from ${limits}`
  // "a whole number from 1 to 64" reads on; after a list of examples a comma is needed.
  return `${KIND_WORDS[variable.kind]}${variable.kind === 'int' ? ' ' : ', '}${range}`
}
