/**
 * The one response a baseline server sends: a body read once into a Buffer and the header set that
 * cms-shield sent with it, both named by environment variables so that the baselines serve exactly
 * the bytes cms-shield serves in the scenario being measured.
 *
 *   BENCH_BODY_FILE     the body, as raw bytes
 *   BENCH_HEADERS_FILE  a JSON object of header names to values (content-type, etag, cache-control, vary)
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
  /** What a matching `If-None-Match` gets: `etag`, `cache-control` and `vary` only, as cms-shield sends. */
  readonly notModifiedHeaders: Readonly<Record<string, string>>
  /** The exact `ETag` value; a request whose `If-None-Match` equals it gets a 304. */
  readonly etag: string | undefined
}

/** The headers a baseline copies from cms-shield's answer; cms-shield's own extras are left out on purpose. */
export const BASELINE_HEADERS = ['content-type', 'etag', 'cache-control', 'vary'] as const

function requiredEnv(name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') {
    process.stderr.write(`baseline: ${name} is not set\n`)
    process.exit(2)
  }
  return value
}

export function loadCannedResponse(): CannedResponse {
  const body = readFileSync(requiredEnv('BENCH_BODY_FILE'))
  const parsed: unknown = JSON.parse(readFileSync(requiredEnv('BENCH_HEADERS_FILE'), 'utf8'))
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('BENCH_HEADERS_FILE must hold a JSON object')
  const given = parsed as Record<string, unknown>
  const headers: Record<string, string> = {}
  for (const name of BASELINE_HEADERS) {
    const value = given[name]
    if (typeof value === 'string') headers[name] = value
  }
  headers['content-length'] = String(body.length)
  const notModifiedHeaders: Record<string, string> = {}
  for (const name of ['etag', 'cache-control', 'vary'] as const) {
    const value = headers[name]
    if (value !== undefined) notModifiedHeaders[name] = value
  }
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
