/**
 * `npm run verify` options. Pure: argv in, options or a usage error out.
 * @module
 */
import type { VerifyOptions } from './run-verify.js'

/** What the command line sets: the run's own options, and where to write every result. */
export interface CliOptions extends Omit<VerifyOptions, 'log' | 'progressEveryMs'> {
  readonly out?: string
}

export const USAGE = `usage: npm run verify -- --cms <URL> --shield <URL> [options]

  --cms <URL>          the CMS, as cms-shield's UPSTREAM_URL (its pages API is <URL><api-path>pages/)
  --shield <URL>       a cms-shield in front of that CMS
  --shield-base <URL>  the shield's BASE_URL (default: learned from its detail_urls, else --shield)
  --api-path <path>    where the CMS mounts its API router, as API_PATH (default /api/v1/cms/;
                       Wagtail's documented layout is /api/v2/)
  --pages-endpoint <name>  the pages endpoint's name, as PAGES_ENDPOINT (default pages)
  --endpoints <a,b>    the router's other endpoints to verify too, as API_ENDPOINTS (e.g. images,documents)
  --host <Host>        a Host header sent with every request to both sides: selects which of the
                       CMS's Sites answers (a Site record's hostname[:port] must match it, else the
                       CMS answers as its default Site)
  --requests <N>       how many requests to compare (default 1000)
  --seed <S>           the corpus's seed: the same seed sends the same requests (default 1)
  --rate <R>           requests per second to each side, discovery included (default 10)
  --timeout <ms>       per request (default 10000)
  --out <file.json>    write every result there`

export class UsageError extends Error {}

function positive(name: string, text: string | undefined, integer: boolean): number {
  const value = Number(text)
  if (text === undefined || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new UsageError(`${name} needs a positive ${integer ? 'integer' : 'number'}, got ${text ?? 'nothing'}`)
  }
  return value
}

function url(name: string, text: string | undefined): string {
  if (text === undefined) throw new UsageError(`${name} is required`)
  let parsed: URL
  try {
    parsed = new URL(text)
  } catch {
    throw new UsageError(`${name} needs an http(s) URL, got ${text}`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`${name} needs an http(s) URL, got ${text}`)
  return text.replace(/\/+$/, '')
}

function apiPath(text: string): string {
  if (!/^\/[\x21-\x7e]*$/.test(text) || /[?#]/.test(text)) throw new UsageError(`--api-path needs a path starting with '/', got ${text}`)
  return text.endsWith('/') ? text : `${text}/`
}

const NAME = /^[A-Za-z0-9_.~-]+$/

function endpointName(option: string, text: string): string {
  if (!NAME.test(text)) throw new UsageError(`${option} needs endpoint names (letters, digits, - _ . ~), got ${JSON.stringify(text)}`)
  return text
}

function hostHeader(text: string): string {
  // hostname, IPv4 or [IPv6], with an optional port: what a Host header may carry.
  if (!/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+;=%-]+)(:\d{0,5})?$/.test(text)) throw new UsageError(`--host needs a host[:port], got ${JSON.stringify(text)}`)
  return text
}

export function parseCliOptions(argv: readonly string[]): CliOptions {
  const values = new Map<string, string>()
  const known = ['--cms', '--shield', '--shield-base', '--requests', '--seed', '--rate', '--timeout', '--out', '--api-path', '--pages-endpoint', '--endpoints', '--host']
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const eq = arg.indexOf('=')
    const name = eq > 0 ? arg.slice(0, eq) : arg
    if (!known.includes(name)) throw new UsageError(`unknown option ${arg}`)
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i]
    if (value === undefined) throw new UsageError(`${name} needs a value`)
    values.set(name, value)
  }
  const seedText = values.get('--seed') ?? '1'
  const seed = Number(seedText)
  if (!Number.isSafeInteger(seed) || seed < 0) throw new UsageError(`--seed needs a non-negative integer, got ${seedText}`)
  const shieldBase = values.get('--shield-base')
  const out = values.get('--out')
  const path = values.get('--api-path')
  const pagesText = values.get('--pages-endpoint')
  const pagesEndpoint = pagesText === undefined ? undefined : endpointName('--pages-endpoint', pagesText)
  const endpointsText = values.get('--endpoints')
  const endpoints = endpointsText === undefined ? undefined : [...new Set(endpointsText.split(',').map((name) => name.trim()).filter((name) => name !== ''))]
    .map((name) => endpointName('--endpoints', name))
  if (endpoints?.includes(pagesEndpoint ?? 'pages')) throw new UsageError(`--endpoints names the pages endpoint (${pagesEndpoint ?? 'pages'}), which is always verified`)
  const host = values.get('--host')
  return {
    cms: url('--cms', values.get('--cms')),
    shield: url('--shield', values.get('--shield')),
    ...(shieldBase === undefined ? {} : { shieldBase: url('--shield-base', shieldBase) }),
    requests: positive('--requests', values.get('--requests') ?? '1000', true),
    seed,
    rate: positive('--rate', values.get('--rate') ?? '10', false),
    timeoutMs: positive('--timeout', values.get('--timeout') ?? '10000', true),
    ...(out === undefined ? {} : { out }),
    ...(path === undefined ? {} : { apiPath: apiPath(path) }),
    ...(pagesEndpoint === undefined ? {} : { pagesEndpoint }),
    ...(endpoints === undefined || endpoints.length === 0 ? {} : { endpoints }),
    ...(host === undefined ? {} : { host: hostHeader(host) }),
  }
}
