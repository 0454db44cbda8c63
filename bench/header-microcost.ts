/**
 * What each optional header of a hit costs Node to write, measured in one process, without a
 * socket: `writeHead(200, list)` on a fresh `ServerResponse` builds the header block (validating
 * every name and value) exactly as a served hit does, so the difference in CPU time between two
 * header lists is what the extra headers cost the server, bar the bytes on the wire. The lists are
 * measured interleaved, A B … B A, in many short batches, and the median batch is kept: on a
 * shared machine this is far steadier than an end-to-end run (the `headers` scenario of
 * `npm run bench`), whose noise is larger than one header. The request id's own generation
 * (`observability/request-id.ts`) is measured the same way, and so is the fast path's prepared
 * block (`http/prepared-headers.ts`: validated once, Node given only `Content-Length`).
 *
 *   npx tsx bench/header-microcost.ts        (pinned: taskset -c 1 npx tsx bench/header-microcost.ts)
 * See docs/performance.md, "Header costs".
 * @module
 */
import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { prepareHeaders, PreparedServerResponse } from '../src/http/prepared-headers.js'
import { createRequestIds } from '../src/observability/request-id.js'

const BATCH = 20_000
const BATCHES = Number(process.env['MICRO_BATCHES'] ?? '40')

/** A hit's headers as cms-shield sends them for a median detail of the seed site (values of the same length). */
const FIVE = [
  'content-type', 'application/json',
  'vary', 'Accept',
  'allow', 'GET, HEAD, OPTIONS',
  'etag', '"f3b1c0de9a8e7d6c5b4a39281706f5e4"',
  'cache-control', 'public, max-age=60, stale-while-revalidate=30, stale-if-error=86400',
  'content-length', '2250',
]
const OPTIONAL: Record<string, [string, string]> = {
  'x-request-id': ['x-request-id', '5f0c2a9e-1b3d-8c4e-a6f7-000000012345'],
  'cache-status': ['cache-status', 'cms-shield; hit; detail=snapshot'],
  'surrogate-key': ['surrogate-key', 'cms-pages cms-page-1179 cms-section-12'],
  'cache-tag': ['cache-tag', 'cms-pages,cms-page-1179,cms-section-12'],
}

const socket = new Socket()
const request = new IncomingMessage(socket)
request.httpVersionMajor = 1
request.httpVersionMinor = 1

function writeHeads(list: string[]): void {
  for (let i = 0; i < BATCH; i++) {
    const res = new ServerResponse(request)
    res.writeHead(200, list)
  }
}

function cpuUs(run: () => void): number {
  const start = process.cpuUsage()
  run()
  const used = process.cpuUsage(start)
  return used.user + used.system
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const variants: Array<[string, () => void]> = [
  ['five headers (+ content-length)', () => writeHeads(FIVE)],
  ...Object.entries(OPTIONAL).map(([name, pair]): [string, () => void] => {
    const list = [...FIVE, ...pair]
    return [`+ ${name}`, () => writeHeads(list)]
  }),
  ['+ all four', () => writeHeads([...FIVE, ...Object.values(OPTIONAL).flat()])],
]
/** The fast path's way (`src/http/prepared-headers.ts`): the block prepared once, Node given only Content-Length. */
function writePrepared(list: string[]): () => void {
  const byName: Record<string, string> = {}
  for (let i = 0; i < list.length - 2; i += 2) byName[list[i]!] = list[i + 1]!
  const { lines } = prepareHeaders(byName)
  const length = list.slice(-2)
  return () => {
    for (let i = 0; i < BATCH; i++) {
      const res = new PreparedServerResponse(request)
      res.preparedLines = lines
      res.writeHead(200, length)
    }
  }
}
variants.push(
  ['five headers, prepared', writePrepared(FIVE)],
  ['all four, prepared', writePrepared([...FIVE.slice(0, -2), ...Object.values(OPTIONAL).flat(), ...FIVE.slice(-2)])],
)
const ids = createRequestIds()
variants.push(['request id generation alone', () => {
  let last = ''
  for (let i = 0; i < BATCH; i++) last = ids(undefined)
  if (last === '') throw new Error('no id')
}])

// Warm-up: every variant optimised before anything is measured.
for (let i = 0; i < 5; i++) for (const [, run] of variants) run()
const perBatch = new Map<string, number[]>(variants.map(([name]) => [name, []]))
for (let b = 0; b < BATCHES; b++) {
  const order = b % 2 === 0 ? variants : [...variants].reverse()
  for (const [name, run] of order) perBatch.get(name)!.push(cpuUs(run) / BATCH)
}
const base = median(perBatch.get(variants[0]![0])!)
process.stdout.write(`node ${process.version}; ${BATCHES} batches of ${BATCH} writeHead calls each, median CPU µs per call\n`)
for (const [name] of variants) {
  const us = median(perBatch.get(name)!)
  const extra = name.startsWith('+') ? `  (+${(us - base).toFixed(3)} µs)` : ''
  process.stdout.write(`${name.padEnd(36)} ${us.toFixed(3)} µs${extra}\n`)
}
