/**
 * The benchmark's CMS: the fake Wagtail (`test/fake-wagtail/`) in a process of its own, so that its
 * work never shares an event loop with the load generator, plus a small JSON control API on a second
 * loopback port for the orchestrator (`bench/run.ts`).
 *
 *   BENCH_ORIGIN_PAGES=1000 BENCH_ORIGIN_LATENCY_MS=0 node --import tsx bench/origin.ts
 *
 * Both servers listen on 127.0.0.1 only, on ports the OS picks. The first stdout line is
 *
 *   bench-origin ready api=http://127.0.0.1:<port> control=http://127.0.0.1:<port> pages=<n>
 *
 * Control API (JSON in, JSON out):
 *   GET  /hits            CMS requests since the last reset: {total, list, detail, find, other, shapes}, where
 *                         shapes counts them by what caused them (bench/lib/request-shape.ts): the sync, or
 *                         read-through of a search, an order, an unknown type, a find by path, a detail with a query…
 *   POST /hits/reset      zero them
 *   POST /latency         {"ms": 250}: delay before every answer
 *   POST /site            {"pages": 10000, "seed": 1}: replace the tree with a generated one
 *   POST /edit            {"id": 42} (or {} for a random page): change that page's title
 *   POST /mutate          {"op": "flag"|"body"|"move"|"create"|"delete"|"unpublish"|"publish", "id"?: 42}:
 *                         one more kind of edit, for the soak (scripts/soak.ts); without an id (create
 *                         takes none) the page is picked at random. delete, unpublish and publish only
 *                         touch pages that create made, so the generated site's pages keep answering 200.
 *                         {"op": "nest", "id": 42, "parentId": 7}: moves page 42 and its subtree below
 *                         page 7 (not below itself), to build the subtree the `purge` row moves.
 *   POST /cost            {"workers": 4, "listItemMs"?, "listItemWithoutUrlMs"?, "detailMs"?, "requestMs"?, "scale"?}: charge
 *                         worker time for every answer (test/fake-wagtail/cost-model.ts; rates default to the ones
 *                         measured against Wagtail); each request waits for a free worker and holds it for its cost
 *                         × scale (default 1: real time; 0: counted, not held). {"off": true} stops charging.
 *   GET  /cost            {totalMs, listingMs, detailMs, otherMs, requests, waited}: the CMS busy time charged since the
 *                         last reset, in ms of the CMS's time (not scaled); {} when not charging
 *   POST /cost/reset      zero it
 *   GET  /info            pages, latency, root id and a sample of page ids
 *   GET  /structure       {limitMax, pages: [{id, type, parentId, locale}]}: every live page, for a scenario that
 *                         derives its queries from the site (the frontend build)
 *
 * BENCH_ORIGIN_LOCALES=en,de starts it with WAGTAIL_I18N_ENABLED and the site translated into each further
 * language (`translatedSite`): the second tree's ids are apart, its pages published later.
 *
 * The process exits when its standard input closes (the orchestrator died) or on SIGTERM/SIGINT.
 * @module
 */
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createCostModel, formatWagtailTimestamp, GENERATED_ROOT_ID, generateSite, startFakeWagtail } from '../test/fake-wagtail/index.js'
import type { FakePage } from '../test/fake-wagtail/index.js'
import { requestShape } from './lib/request-shape.js'
import type { RequestShape } from './lib/request-shape.js'

/** How many page ids `/site` and `/info` hand back: enough to spread detail hits, small enough to stay cheap. */
const SAMPLE_IDS = 2_000
/** The fake's WAGTAILAPI_LIMIT_MAX (its default). */
const ORIGIN_LIMIT_MAX = 250
/** Largest control request body accepted. */
const MAX_CONTROL_BODY = 64 * 1024

function envInteger(name: string, fallback: number): number {
  const raw = process.env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) {
    process.stderr.write(`bench-origin: ${name}=${JSON.stringify(raw)} is not a non-negative integer\n`)
    process.exit(2)
  }
  return Number(raw)
}

let pageCount = envInteger('BENCH_ORIGIN_PAGES', 1_000)
let seed = envInteger('BENCH_ORIGIN_SEED', 1)
let latencyMs = envInteger('BENCH_ORIGIN_LATENCY_MS', 0)
/** With more than one: WAGTAIL_I18N_ENABLED, and the site in each language after the first. */
const locales = (process.env.BENCH_ORIGIN_LOCALES ?? '').split(',').map((code) => code.trim()).filter((code) => code !== '')
/** Added to a translation's ids per language, so that no two pages share one. */
const TRANSLATION_OFFSET = 1_000_000
/** A translation is published a few days after its original: publication times stay distinct, as in a real site. */
const TRANSLATED_LATER_MS = 3 * 86_400_000

/** The site with a copy in each further language, as Wagtail's `copy_for_translation` makes it. */
function translatedSite(english: FakePage[]): FakePage[] {
  const copies = locales.slice(1).flatMap((locale, n) => english.map((page): FakePage => {
    const shift = (id: number) => id + TRANSLATION_OFFSET * (n + 1)
    const fraction = /\.(\d{1,6})/.exec(page.firstPublishedAt ?? '')?.[1] ?? ''
    const published = page.firstPublishedAt === null
      ? null
      : formatWagtailTimestamp(Date.parse(page.firstPublishedAt) + TRANSLATED_LATER_MS * (n + 1), Number(fraction.padEnd(6, '0')), 'UTC')
    return {
      ...page,
      id: shift(page.id),
      parentId: page.parentId === null ? null : shift(page.parentId),
      ...(page.aliasOf == null ? {} : { aliasOf: shift(page.aliasOf) }),
      slug: page.parentId === null ? `${page.slug}-${locale}` : page.slug,
      title: `${page.title} (${locale})`,
      firstPublishedAt: published,
      locale,
      translationKey: `page-${page.id}`,
    }
  }))
  return [...english, ...copies]
}

const siteOf = (options: { pages: number; seed: number }): FakePage[] => {
  const generated = generateSite(options)
  return locales.length > 1 ? translatedSite(generated) : generated
}

let pages: FakePage[] = siteOf({ pages: pageCount, seed })
let edits = 0
/** Ids of the pages `/mutate` created (and not yet deleted): the only ones it deletes or unpublishes. */
let created = new Set<number>()

const origin = await startFakeWagtail({
  pages, latencyMs, host: '127.0.0.1', port: 0, recordRequests: false, ...(locales.length > 1 ? { i18n: true, locales } : {}),
})

/** CMS requests by shape since the last reset: the sync's own, and read-through by what a client asked. */
let shapes: Partial<Record<RequestShape, number>> = {}
origin.onRequest((request) => {
  const shape = requestShape(request.kind, request.query)
  shapes[shape] = (shapes[shape] ?? 0) + 1
})

/** Every `step`-th id of the current tree (root excluded), at most SAMPLE_IDS of them. */
function sampleIds(): number[] {
  const ids = pages.filter((page) => page.parentId !== null).map((page) => page.id)
  if (ids.length <= SAMPLE_IDS) return ids
  const step = ids.length / SAMPLE_IDS
  return Array.from({ length: SAMPLE_IDS }, (_, i) => ids[Math.floor(i * step)] as number)
}

function info(): Record<string, unknown> {
  return { pages: pages.length, seed, latencyMs, rootId: GENERATED_ROOT_ID, sampleIds: sampleIds() }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    const buffer = chunk as Buffer
    size += buffer.length
    if (size > MAX_CONTROL_BODY) throw new Error('control body too large')
    chunks.push(buffer)
  }
  const text = Buffer.concat(chunks).toString('utf8').trim()
  if (text === '') return {}
  const value: unknown = JSON.parse(text)
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('control body must be a JSON object')
  return value as Record<string, unknown>
}

function nonNegativeInteger(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer`)
  return value
}

function optionalNumber(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`)
  return value
}

/** `POST /cost`: a charging CMS (`cost-model.ts`), its holds scaled to keep a benchmark short. */
function setCost(body: Record<string, unknown>): Record<string, unknown> {
  if (body.off === true) {
    origin.setCost(undefined)
    return {}
  }
  const scale = optionalNumber(body.scale, 'scale') ?? 1
  const rates = Object.fromEntries(
    (['listItemMs', 'listItemWithoutUrlMs', 'detailMs', 'requestMs'] as const).flatMap((name) => {
      const value = optionalNumber(body[name], name)
      return value === undefined ? [] : [[name, value]]
    }),
  )
  const model = createCostModel({
    ...rates,
    ...(body.workers === undefined ? {} : { workers: nonNegativeInteger(body.workers, 'workers') }),
    // Scale 0 counts without holding: no timer tick per request.
    hold: scale === 0 ? () => Promise.resolve() : (ms) => new Promise((resolve) => setTimeout(resolve, ms * scale)),
  })
  origin.setCost(model)
  return { workers: model.workers, rates: model.rates, scale }
}

function editPage(requested: unknown): { id: number; title: string; path: string } {
  const candidates = pages.filter((page) => page.parentId !== null)
  if (candidates.length === 0) throw new Error('no page to edit')
  const id = requested === undefined
    ? (candidates[Math.floor(Math.random() * candidates.length)] as FakePage).id
    : nonNegativeInteger(requested, 'id')
  const position = pages.findIndex((page) => page.id === id)
  if (position < 0) throw new Error(`no page ${id}`)
  edits++
  const page = pages[position] as FakePage
  // Strip an earlier edit mark so repeated edits do not grow the title.
  const title = `${page.title.replace(/ · edit \d+$/, '')} · edit ${edits}`
  pages[position] = { ...page, title }
  origin.updatePage(id, { title })
  return { id, title, path: `/api/v1/cms/pages/${id}/` }
}

/** The start of the error a `nest` into a parent that has a child with the page's slug gets. */
const SLUG_IN_USE = 'slug already in use at the new parent'

const MUTATIONS = ['flag', 'body', 'move', 'nest', 'create', 'delete', 'unpublish', 'publish'] as const
type Mutation = (typeof MUTATIONS)[number]

function pickOne<T>(items: readonly T[], what: string): T {
  if (items.length === 0) throw new Error(`no ${what}`)
  return items[Math.floor(Math.random() * items.length)] as T
}

function pageById(id: number): FakePage {
  const page = pages.find((each) => each.id === id)
  if (!page) throw new Error(`no page ${id}`)
  return page
}

/** The requested page, or a random one of `candidates`. */
function target(requested: unknown, candidates: readonly FakePage[], what: string): FakePage {
  return requested === undefined ? pickOne(candidates, what) : pageById(nonNegativeInteger(requested, 'id'))
}

/**
 * One edit of a kind `/edit` does not make. Every change goes through the fake's own store
 * methods (a delete takes the subtree with it); `pages` is then re-read from the store, so
 * `/edit` and `/info` see the same tree.
 */
/** Whether `id` is `ancestor` or below it. */
function isWithin(id: number, ancestor: number): boolean {
  for (let current: number | null = id; current !== null; current = pageById(current).parentId) if (current === ancestor) return true
  return false
}

/**
 * Whether `parentId` already has a child with `page`'s slug. Wagtail refuses such a move (a slug is
 * unique among siblings); two siblings with one slug would give two pages one URL, which no real
 * tree has and which `find/` cannot tell apart.
 */
function slugTaken(page: FakePage, parentId: number): boolean {
  return pages.some((each) => each.parentId === parentId && each.id !== page.id && each.slug === page.slug)
}

function mutatePage(op: Mutation, requested: unknown, parentId?: unknown): Record<string, unknown> {
  const nonRoot = pages.filter((page) => page.parentId !== null)
  // Top-level LandingPages: the only new parents, so a move never puts a page below itself.
  const landings = pages.filter((page) => page.parentId === GENERATED_ROOT_ID && page.type === 'cms.LandingPage')
  edits++
  let answer: Record<string, unknown>
  switch (op) {
    case 'flag': {
      const page = target(requested, nonRoot, 'page to re-flag')
      origin.updatePage(page.id, { showInMenus: !page.showInMenus })
      answer = { id: page.id, showInMenus: !page.showInMenus }
      break
    }
    case 'body': {
      // A change only the detail shows (no listing field moves): what PURGE exists for.
      const page = target(requested, nonRoot.filter((each) => typeof each.extra?.intro === 'string'), 'page with an intro')
      const intro = `${String(page.extra?.intro).replace(/ · rev \d+$/, '')} · rev ${edits}`
      origin.updatePage(page.id, { extra: { ...page.extra, intro } })
      answer = { id: page.id, intro }
      break
    }
    case 'move': {
      const page = target(requested, nonRoot.filter((each) => each.parentId !== GENERATED_ROOT_ID), 'page below the top level')
      if (page.parentId === GENERATED_ROOT_ID) throw new Error('only pages below the top level move')
      const parent = pickOne(landings.filter((each) => each.id !== page.parentId && !slugTaken(page, each.id)), 'other LandingPage')
      origin.movePage(page.id, parent.id)
      answer = { id: page.id, parentId: parent.id }
      break
    }
    case 'nest': {
      const page = pageById(nonNegativeInteger(requested, 'id'))
      const parent = pageById(nonNegativeInteger(parentId, 'parentId'))
      if (page.parentId === null || isWithin(parent.id, page.id)) throw new Error(`page ${page.id} cannot move below ${parent.id}`)
      if (slugTaken(page, parent.id)) throw new Error(`${SLUG_IN_USE}: page ${page.id} cannot move below ${parent.id}`)
      origin.movePage(page.id, parent.id)
      answer = { id: page.id, parentId: parent.id }
      break
    }
    case 'create': {
      // A leaf below a random top-level LandingPage (`id` is ignored).
      const parent = pickOne(landings, 'LandingPage')
      const template = pages.find((each) => each.type === 'cms.GenericPage')
      const id = pages.reduce((max, page) => Math.max(max, page.id), 0) + 1
      const title = `Soak page ${edits}`
      origin.addPage({
        id,
        type: 'cms.GenericPage',
        title,
        slug: `soak-page-${edits}`,
        parentId: parent.id,
        showInMenus: true,
        seoTitle: '',
        searchDescription: '',
        firstPublishedAt: formatWagtailTimestamp(Date.now(), 0, 'UTC'),
        extra: { ...template?.extra },
      })
      created.add(id)
      answer = { id, parentId: parent.id, title }
      break
    }
    case 'delete': {
      const page = target(requested, pages.filter((each) => created.has(each.id)), 'created page')
      if (!created.has(page.id)) throw new Error(`page ${page.id} was not created by /mutate`)
      origin.removePage(page.id)
      created.delete(page.id)
      answer = { id: page.id }
      break
    }
    case 'unpublish':
    case 'publish': {
      const live = op === 'publish'
      const page = target(requested, pages.filter((each) => created.has(each.id) && (each.live !== false) !== live), `created page to ${op}`)
      if (!created.has(page.id)) throw new Error(`page ${page.id} was not created by /mutate`)
      origin.updatePage(page.id, { live })
      answer = { id: page.id, live }
      break
    }
  }
  pages = origin.pages()
  return { op, ...answer, path: `/api/v1/cms/pages/${String(answer.id)}/` }
}

async function control(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1')
  const route = `${req.method ?? 'GET'} ${url.pathname}`
  let answer: unknown
  switch (route) {
    case 'GET /hits':
      answer = { ...origin.hits, shapes }
      break
    case 'POST /hits/reset':
      origin.resetHits()
      shapes = {}
      answer = { ...origin.hits, shapes }
      break
    case 'POST /latency': {
      const body = await readJson(req)
      latencyMs = nonNegativeInteger(body.ms, 'ms')
      origin.setLatency(latencyMs)
      answer = { latencyMs }
      break
    }
    case 'POST /site': {
      const body = await readJson(req)
      pageCount = Math.max(1, nonNegativeInteger(body.pages, 'pages'))
      if (body.seed !== undefined) seed = nonNegativeInteger(body.seed, 'seed')
      const started = performance.now()
      pages = siteOf({ pages: pageCount, seed })
      origin.setPages(pages)
      edits = 0
      created = new Set()
      answer = { ...info(), generatedMs: Math.round(performance.now() - started) }
      break
    }
    case 'POST /edit': {
      const body = await readJson(req)
      answer = editPage(body.id)
      break
    }
    case 'POST /mutate': {
      const body = await readJson(req)
      if (!(MUTATIONS as readonly unknown[]).includes(body.op)) throw new Error(`op must be one of ${MUTATIONS.join(', ')}`)
      answer = mutatePage(body.op as Mutation, body.id, body.parentId)
      break
    }
    case 'POST /cost':
      answer = setCost(await readJson(req))
      break
    case 'GET /cost':
      answer = origin.cost?.busy() ?? {}
      break
    case 'POST /cost/reset':
      origin.cost?.reset()
      answer = origin.cost?.busy() ?? {}
      break
    case 'GET /info':
      answer = info()
      break
    case 'GET /structure':
      answer = {
        limitMax: ORIGIN_LIMIT_MAX,
        pages: pages.filter((page) => page.live !== false).map((page) => ({ id: page.id, type: page.type, parentId: page.parentId, locale: page.locale ?? 'en' })),
      }
      break
    default:
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: `no control route ${route}` }))
      return
  }
  const text = JSON.stringify(answer)
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

const controlServer = createServer((req, res) => {
  control(req, res).catch((error: unknown) => {
    const text = JSON.stringify({ error: error instanceof Error ? error.message : String(error) })
    if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' })
    res.end(text)
  })
})
await new Promise<void>((resolve, reject) => {
  controlServer.once('error', reject)
  controlServer.listen(0, '127.0.0.1', () => resolve())
})
const controlAddress = controlServer.address()
if (controlAddress === null || typeof controlAddress === 'string') throw new Error('bench-origin: no control address')

process.stdout.write(
  `bench-origin ready api=${origin.url} control=http://127.0.0.1:${controlAddress.port} pages=${pages.length}\n`,
)

let stopping = false
function stop(reason: string): void {
  if (stopping) return
  stopping = true
  process.stderr.write(`bench-origin: ${reason}, closing after ${origin.hits.total} requests\n`)
  setTimeout(() => process.exit(1), 3_000).unref()
  controlServer.close()
  controlServer.closeAllConnections()
  origin.close().then(() => process.exit(0), () => process.exit(1))
}
process.once('SIGTERM', () => stop('SIGTERM'))
process.once('SIGINT', () => stop('SIGINT'))
// The orchestrator holds our stdin open; when it goes away (even by SIGKILL), so do we.
process.stdin.on('end', () => stop('stdin closed'))
process.stdin.on('error', () => stop('stdin error'))
process.stdin.resume()
