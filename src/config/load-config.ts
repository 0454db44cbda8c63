/**
 * Reads the environment once at boot into a validated, deep-frozen `Config`.
 *
 * Every variable is checked before anything is reported, so an operator fixes a broken
 * deployment in one round instead of one variable per restart.
 * @module
 */

import { createError } from '../errors.js'
import { describeExpected, parseValue } from './parse-value.js'
import { variables, type Config, type Variable } from './schema.js'

export type { Config, LogLevel } from './schema.js'

export type Env = Readonly<Record<string, string | undefined>>

/** How much of a bad value a problem line quotes: enough to recognise it, not a whole file. */
const QUOTE_LIMIT = 200
const REDACTED = '[redacted]'

/**
 * Parses and validates every variable in the schema.
 *
 * An empty (or all-blank) value counts as unset, so `PORT=` in an env file means "the default";
 * `0` is a value like any other (`PORT=0`, `UPSTREAM_RETRIES=0`).
 *
 * @throws ProxyError `CONFIG_INVALID` listing one problem per line, e.g.
 *   `PORT: got "80a", expected a whole number from 0 to 65535` or
 *   `UPSTREAM_URL: is required (Base URL of the Wagtail CMS, …)`; `details.problems` holds the lines.
 * @example
 * const config = loadConfig({ UPSTREAM_URL: 'https://cms.example.com', BASE_URL: 'https://api.example.com' })
 * config.syncIntervalMs // 60_000
 */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = []
  const values: Record<string, unknown> = {}

  for (const [key, variable] of variables()) {
    const given = env[variable.name]?.trim()
    const text = given === undefined || given === '' ? variable.default : given
    if (text === undefined) {
      if (variable.optional !== true) problems.push(`${variable.name}: is required (${variable.doc})`)
      continue
    }
    const result = parseValue(variable, text)
    if (result.ok) values[key] = result.value
    else problems.push(`${variable.name}: got ${quote(variable, text)}, ${result.reason ?? `expected ${describeExpected(variable)}`}`)
  }

  // Sentinel needs its master's name; only one way to reach Redis makes sense.
  const ways = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'].filter((name) => (env[name]?.trim() ?? '') !== '')
  if (ways.length > 1) problems.push(`${ways.join(', ')}: set only one of them`)
  if ((env['REDIS_SENTINELS']?.trim() ?? '') !== '' && (env['REDIS_SENTINEL_NAME']?.trim() ?? '') === '') {
    problems.push('REDIS_SENTINEL_NAME: is required with REDIS_SENTINELS')
  }

  const refreshToken = env['REFRESH_TOKEN']?.trim()
  if (refreshToken && refreshToken.length < 16) problems.push('REFRESH_TOKEN: must be at least 16 characters long')
  const frontendToken = env['FRONTEND_TOKEN']?.trim()
  if (frontendToken && frontendToken.length < 16) problems.push('FRONTEND_TOKEN: must be at least 16 characters long')
  const purgeToken = env['PURGE_TOKEN']?.trim()
  if (purgeToken && purgeToken.length < 16) problems.push('PURGE_TOKEN: must be at least 16 characters long')

  // A purge target needs both its address and its credential; half of one is a typo, not a choice.
  for (const [a, b] of [['FASTLY_SERVICE_ID', 'FASTLY_API_TOKEN'], ['CLOUDFLARE_ZONE_ID', 'CLOUDFLARE_API_TOKEN']] as const) {
    const hasA = (env[a]?.trim() ?? '') !== ''
    const hasB = (env[b]?.trim() ?? '') !== ''
    if (hasA !== hasB) problems.push(`${hasA ? b : a}: is required with ${hasA ? a : b} (set both or neither)`)
  }

  // Purges name surrogate keys: answers without them would stay cached for CDN_MAX_AGE, unpurgeable.
  // Varnish's VCL and Fastly read `Surrogate-Key`, Cloudflare reads `Cache-Tag` (docs/cdn-purging.md).
  const tagHeaders = values['cacheTagHeaders'] as readonly string[] | undefined
  const needs = [
    ['surrogate-key', ['CDN_PURGE_VARNISH', 'FASTLY_SERVICE_ID']],
    ['cache-tag', ['CLOUDFLARE_ZONE_ID']],
  ] as const
  for (const [header, targets] of needs) {
    const set = targets.filter((name) => (env[name]?.trim() ?? '') !== '')
    if (set.length > 0 && tagHeaders !== undefined && !tagHeaders.includes(header)) {
      problems.push(`CACHE_TAG_HEADERS: must include ${header} with ${set.join(' and ')}: its purges name the keys that header carries`)
    }
  }

  // The pages endpoint is answered from the tree: naming it again as a read-through one is a typo.
  const endpoints = values['apiEndpoints'] as readonly string[] | undefined
  const pagesEndpoint = values['pagesEndpoint'] as string | undefined
  if (endpoints !== undefined && pagesEndpoint !== undefined && endpoints.includes(pagesEndpoint)) {
    problems.push(`API_ENDPOINTS: names ${pagesEndpoint}, the pages endpoint (PAGES_ENDPOINT): list only the router's other endpoints`)
  }

  if (problems.length > 0) {
    throw createError('CONFIG_INVALID', `invalid configuration:\n${problems.join('\n')}`, {
      details: { problems: Object.freeze(problems) },
    })
  }
  return deepFreeze(values as unknown as Config)
}

function quote(variable: Variable, text: string): string {
  if (variable.secret === true) return JSON.stringify(REDACTED)
  const shown = text.length > QUOTE_LIMIT ? `${text.slice(0, QUOTE_LIMIT)}…` : text
  // JSON quoting makes control characters and stray quotes visible in a log line.
  return JSON.stringify(shown)
}

/** The effective configuration as a log-safe object: secrets redacted, everything else as loaded. */
export function describeConfig(config: Config): Readonly<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  for (const [key, variable] of variables()) {
    if (config[key] === undefined) continue
    const value = config[key]
    // A Redis URL may carry a password (`redis://:secret@host`): keep the address, drop the secret.
    out[key] = variable.secret === true ? REDACTED : typeof value === 'string' ? value.replace(/\/\/[^@/]*@/, `//${REDACTED}@`) : value
  }
  return Object.freeze(out)
}

/** Freezes `value` and everything reachable from it; `Object.freeze` alone is shallow. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}
