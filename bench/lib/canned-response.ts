/**
 * The one response a baseline server sends: a body read once into a Buffer and a header set taken
 * from what cms-shield sent with it, both named by environment variables so that the baselines serve
 * exactly the bytes cms-shield serves in the scenario being measured.
 *
 *   BENCH_BODY_FILE     the body, as raw bytes
 *   BENCH_HEADERS_FILE  JSON `{"ok": {...}, "notModified": {...}}`: the 200's headers and a 304's
 *                       (`baselineHeaders()` below picks them from cms-shield's answers)
 *
 * SIGHUP reads both files again (the orchestrator writes the next scenario's response and signals),
 * so a baseline stays up, and warm, across scenarios. Each load prints one line on stdout.
 * @module
 */
import { readFileSync } from 'node:fs'

export interface CannedResponse {
  readonly body: Buffer
  /** The 200's headers, `content-length` included. */
  readonly headers: Readonly<Record<string, string>>
  /** What a matching `If-None-Match` gets. */
  readonly notModifiedHeaders: Readonly<Record<string, string>>
  /** The exact `ETag` value; a request whose `If-None-Match` equals it gets a 304. */
  readonly etag: string | undefined
}

export interface CannedHeaders {
  readonly ok: Readonly<Record<string, string>>
  readonly notModified: Readonly<Record<string, string>>
}

/**
 * Which of cms-shield's headers the baselines send (`BENCH_BASELINE_HEADERS`):
 * - `same` (the default): every header cms-shield sent, its request id as a fixed value of the same
 *   length, so both put the same bytes on the wire and the ratio is cms-shield's own work per request.
 * - `minimal`: `content-type`, `etag`, `cache-control` and `vary` (a 304: the last three), what any
 *   cache in front of a CMS sends. cms-shield's other headers (request id, `allow`, `cache-status`,
 *   `surrogate-key`, `cache-tag`) then cost it and not them; the detail row's four-header node
 *   baseline always sends this set, to price those headers.
 */
export type BaselineHeaderSet = 'minimal' | 'same' | 'five'

/**
 * `five` (the `wrk` scenario's baselines): what a cached Wagtail answer needs, the API's
 * `content-type`, `vary` and `allow` plus the `etag` and `cache-control` of any cache (a 304: the
 * validators and caching headers, as cms-shield's own 304).
 */
const FIVE_OK = ['content-type', 'vary', 'allow', 'etag', 'cache-control'] as const
const MINIMAL_OK = ['content-type', 'etag', 'cache-control', 'vary'] as const
const MINIMAL_NOT_MODIFIED = ['etag', 'cache-control', 'vary'] as const
/** Node writes these itself (or, for `content-length`, the baseline does from the body it holds). */
const CONNECTION_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length'])

function pick(headers: Readonly<Record<string, string>>, names: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {}
  for (const name of names) {
    const value = headers[name]
    if (value !== undefined) picked[name] = value
  }
  return picked
}

function allBut(headers: Readonly<Record<string, string>>): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) if (!CONNECTION_HEADERS.has(name)) kept[name] = value
  return kept
}

/**
 * The headers a baseline sends for a response cms-shield answered with `ok` (and, when the scenario
 * revalidates, with `notModified` to a matching `If-None-Match`).
 */
export function baselineHeaders(set: BaselineHeaderSet, ok: Readonly<Record<string, string>>, notModified?: Readonly<Record<string, string>>): CannedHeaders {
  if (set === 'five') return { ok: pick(ok, FIVE_OK), notModified: pick(ok, MINIMAL_NOT_MODIFIED) }
  if (set === 'minimal') return { ok: pick(ok, MINIMAL_OK), notModified: pick(ok, MINIMAL_NOT_MODIFIED) }
  return { ok: allBut(ok), notModified: allBut(notModified ?? pick(ok, MINIMAL_NOT_MODIFIED)) }
}

function requiredEnv(name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') {
    process.stderr.write(`baseline: ${name} is not set\n`)
    process.exit(2)
  }
  return value
}

function stringRecord(value: unknown, what: string): Record<string, string>
function stringRecord(value: unknown, what: string, anyValues: true): Record<string, unknown>
function stringRecord(value: unknown, what: string, anyValues = false): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${what} must hold a JSON object`)
  if (anyValues) return value as Record<string, unknown>
  const record: Record<string, string> = {}
  for (const [name, each] of Object.entries(value)) if (typeof each === 'string') record[name] = each
  return record
}

export function loadCannedResponse(): CannedResponse {
  const body = readFileSync(requiredEnv('BENCH_BODY_FILE'))
  const file = stringRecord(JSON.parse(readFileSync(requiredEnv('BENCH_HEADERS_FILE'), 'utf8')), 'BENCH_HEADERS_FILE', true)
  const headers: Record<string, string> = { ...stringRecord(file.ok, 'BENCH_HEADERS_FILE ok'), 'content-length': String(body.length) }
  const notModifiedHeaders = stringRecord(file.notModified, 'BENCH_HEADERS_FILE notModified')
  return { body, headers, notModifiedHeaders, etag: headers.etag }
}

/** What the request handler reads on every request; SIGHUP replaces `current`. */
export interface CannedHolder {
  current: CannedResponse
}

/**
 * Loads the response, reloads it on SIGHUP, exits when stdin closes (the orchestrator went away) or
 * on SIGTERM/SIGINT, and prints `<name> ready url=…` once `listen` has resolved.
 */
export async function serveCanned(
  name: string,
  listen: (holder: CannedHolder) => Promise<{ port: number; close: () => Promise<void> }>,
): Promise<void> {
  const holder: CannedHolder = { current: loadCannedResponse() }
  const server = await listen(holder)
  process.on('SIGHUP', () => {
    try {
      holder.current = loadCannedResponse()
      process.stdout.write(`${name} reloaded bytes=${holder.current.body.length} etag=${holder.current.etag ?? '-'}\n`)
    } catch (error) {
      process.stdout.write(`${name} reload failed: ${error instanceof Error ? error.message : String(error)}\n`)
    }
  })
  let stopping = false
  const stop = (): void => {
    if (stopping) return
    stopping = true
    setTimeout(() => process.exit(1), 2_000).unref()
    server.close().then(() => process.exit(0), () => process.exit(1))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  process.stdin.on('end', stop)
  process.stdin.on('error', stop)
  process.stdin.resume()
  process.stdout.write(`${name} ready url=http://127.0.0.1:${server.port} bytes=${holder.current.body.length}\n`)
}
