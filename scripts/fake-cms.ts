/**
 * The fake Wagtail origin on its own, without cms-shield: the `cms` service of `compose.yaml`, and a
 * CMS for anyone who wants to point a cms-shield (`npm start`, a container) at something.
 *
 *   PORT=8000 HOST=0.0.0.0 PAGES=89 LATENCY_MS=20 node --import tsx scripts/fake-cms.ts
 *
 * `PORT` (default 8000; 0 picks a free one), `HOST` (default 0.0.0.0, so other containers reach it),
 * `PAGES` (size of the generated seed-shaped site, default 89) and `LATENCY_MS` (delay before every
 * answer, default 20, so the cost of asking the CMS stays visible). The first line on stdout is
 * `fake Wagtail CMS listening on <url>`; tests read the URL from it. SIGTERM or SIGINT closes the
 * server and exits 0; a bad variable exits 2 naming it, as cms-shield's own configuration does.
 * @module
 */
import { generateSite, startFakeWagtail } from '../test/fake-wagtail/index.js'

/** How long closing may take before the process gives up waiting; the fake destroys its sockets, so it is quick. */
const CLOSE_DEADLINE_MS = 5_000

/** An integer variable within bounds, or the reason it is not one (collected so every problem is shown at once). */
function integer(name: string, fallback: number, min: number, max: number, problems: string[]): number {
  const raw = process.env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN
  if (Number.isSafeInteger(value) && value >= min && value <= max) return value
  problems.push(`${name}=${JSON.stringify(raw)}: expected an integer from ${min} to ${max}`)
  return fallback
}

const problems: string[] = []
const port = integer('PORT', 8000, 0, 65_535, problems)
const pages = integer('PAGES', 89, 1, 1_000_000, problems)
const latencyMs = integer('LATENCY_MS', 20, 0, 60_000, problems)
const host = process.env.HOST?.trim() || '0.0.0.0'
if (problems.length > 0) {
  process.stderr.write(`fake-cms: invalid configuration\n${problems.join('\n')}\n`)
  process.exit(2)
}

// Requests are counted but not recorded: this process may run for days, and the record only grows.
const origin = await startFakeWagtail({ pages: generateSite({ pages }), latencyMs, port, host, recordRequests: false })
const listening = new URL(origin.url)
process.stdout.write(
  `fake Wagtail CMS listening on ${origin.url}\n` +
    `  bound to ${host}:${listening.port}; ${pages} pages, ${latencyMs} ms per answer\n` +
    `  try: curl -s '${origin.url}/api/v1/cms/pages/?limit=1'\n`,
)

let stopping = false
const stop = (signal: NodeJS.Signals): void => {
  if (stopping) return
  stopping = true
  process.stdout.write(`fake-cms: ${signal}, closing after ${origin.hits.total} requests\n`)
  // A close that never finishes must not keep a container from stopping cleanly before its grace period ends.
  setTimeout(() => {
    process.stderr.write(`fake-cms: not closed within ${CLOSE_DEADLINE_MS} ms, exiting\n`)
    process.exit(1)
  }, CLOSE_DEADLINE_MS).unref()
  origin.close().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`fake-cms: close failed: ${error instanceof Error ? error.message : String(error)}\n`)
      process.exit(1)
    },
  )
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)
