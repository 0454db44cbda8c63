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

  --cms <URL>          the CMS, as cms-shield's UPSTREAM_URL (its API is <URL>/api/v1/cms/pages/)
  --shield <URL>       a cms-shield in front of that CMS
  --shield-base <URL>  the shield's BASE_URL (default: learned from its detail_urls, else --shield)
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

export function parseCliOptions(argv: readonly string[]): CliOptions {
  const values = new Map<string, string>()
  const known = ['--cms', '--shield', '--shield-base', '--requests', '--seed', '--rate', '--timeout', '--out']
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
  return {
    cms: url('--cms', values.get('--cms')),
    shield: url('--shield', values.get('--shield')),
    ...(shieldBase === undefined ? {} : { shieldBase: url('--shield-base', shieldBase) }),
    requests: positive('--requests', values.get('--requests') ?? '1000', true),
    seed,
    rate: positive('--rate', values.get('--rate') ?? '10', false),
    timeoutMs: positive('--timeout', values.get('--timeout') ?? '10000', true),
    ...(out === undefined ? {} : { out }),
  }
}
