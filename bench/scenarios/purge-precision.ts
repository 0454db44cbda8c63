/**
 * Part of `purge`: how precise each edit's purge is. At `BENCH_PAGES_LARGE` pages, on the
 * `purge` row's cluster (three instances, Redis, a recording stand-in for Varnish), five editor
 * actions — a retitle, a body-only edit, a move of a subtree of at least 1,000 pages, a publish and
 * an unpublish — each against a sample of the answers a CDN may hold: every answer the edit can
 * touch (the page, its chain and their lists in several shapes, its children, its siblings, its
 * `find/` path, the whole subtree that moves) and a spread of others. For each answer the bytes
 * and `Surrogate-Key` before the edit and the bytes after; an answer is purged when one of its
 * keys came in a purge the edit caused. Reported: answers purged ÷ answers whose bytes changed
 * (1.0 is exact; goal ≤ 1.25), changed answers left unpurged (must be 0), keys per answer (max,
 * median) and bytes of `xkey-purge` per purge request. See bench/README.md, scenario `purge`.
 * @module
 */
import type { BenchCluster } from '../lib/cluster.js'
import type { BenchContext } from '../lib/context.js'
import { call, postJson, sleep, waitFor } from '../lib/http.js'
import { check, fmtInt, verdict } from '../lib/report.js'
import { percentileOfSorted } from '../lib/stats.js'
import type { VarnishRecorder } from '../lib/varnish-recorder.js'

const RATIO_TARGET = 1.25
/** The size of the subtree the move carries, at least. */
const SUBTREE_PAGES = 1_000
/** Answers fetched at once from the syncing instance. */
const CONCURRENCY = 8
/** Once a purge arrived, how long without another before the edit's purges are taken as complete. */
const QUIET_MS = 500
const API = '/api/v1/cms/pages/'

interface Seen {
  readonly state: string
  readonly keys: readonly string[]
}

interface Page {
  readonly id: number
  readonly parentId: number | null
  readonly htmlPath: string | undefined
}

type Shield = BenchCluster['leader']

/** Tries of one GET the instance sheds (503) or refuses (429) on a busy machine, before giving up. */
const TRIES = 20

/** A GET, asked again (bounded) while the instance sheds it: a shed answer says nothing of the tree. */
async function settledGet(url: string): Promise<Awaited<ReturnType<typeof call>>> {
  for (let attempt = 1; ; attempt++) {
    const response = await call(url, { timeoutMs: 10_000 })
    if ((response.status !== 429 && response.status < 500) || attempt === TRIES) return response
    await sleep(250)
  }
}

async function fetchAll(shield: Shield, paths: readonly string[]): Promise<Map<string, Seen>> {
  const seen = new Map<string, Seen>()
  let next = 0
  const worker = async () => {
    for (let i = next++; i < paths.length; i = next++) {
      const path = paths[i]!
      const response = await settledGet(`${shield.origin}${path}`)
      const keys = (response.headers.get('surrogate-key') ?? '').split(' ').filter((key) => key !== '')
      seen.set(path, { state: `${response.status} ${response.headers.get('location') ?? ''} ${response.body.toString('utf8')}`, keys })
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return seen
}

/** One page as its detail shows it; `undefined` when it has none. */
async function pageOf(shield: Shield, id: number): Promise<Page | undefined> {
  const response = await settledGet(`${shield.origin}${API}${id}/`)
  if (response.status === 404) return undefined
  if (response.status !== 200) throw new Error(`GET ${API}${id}/: ${response.status}`)
  const body = JSON.parse(response.body.toString('utf8')) as { meta: { parent: { id: number } | null; html_url: string | null } }
  return { id, parentId: body.meta.parent?.id ?? null, htmlPath: body.meta.html_url === null ? undefined : new URL(body.meta.html_url).pathname }
}

async function listIds(shield: Shield, query: string): Promise<{ total: number; ids: number[] }> {
  const response = await settledGet(`${shield.origin}${API}?${query}`)
  if (response.status !== 200) throw new Error(`GET ${API}?${query}: ${response.status}`)
  const body = JSON.parse(response.body.toString('utf8')) as { meta: { total_count: number }; items: Array<{ id: number }> }
  return { total: body.meta.total_count, ids: body.items.map((item) => item.id) }
}

/** Every page of a subtree, through `child_of` lists (a window of 20 at a time, the CMS's limit). */
async function subtreeIds(shield: Shield, id: number): Promise<number[]> {
  const found: number[] = []
  const queue = [id]
  while (queue.length > 0) {
    const parent = queue.shift()!
    found.push(parent)
    queue.push(...(await childIds(shield, parent)))
  }
  return found
}

/** The lists a CDN may hold around `id`: of its chain, in the shapes a frontend asks for. */
function listsAround(ids: readonly number[]): string[] {
  const shapes = ['', '&show_in_menus=true', '&type=cms.GenericPage', '&fields=title,show_in_menus', '&limit=20&offset=20']
  const paths: string[] = []
  for (const id of ids) {
    for (const filter of ['child_of', 'descendant_of']) for (const shape of shapes) paths.push(`${API}?${filter}=${id}${shape}`)
    paths.push(`${API}?ancestor_of=${id}`)
  }
  return paths
}

/** The answers around `ids` (their chains, siblings and children) and a spread of others. */
async function sampleAround(shield: Shield, ids: readonly number[], spread: readonly number[], extra: readonly string[]): Promise<string[]> {
  const paths = new Set<string>(extra)
  const chain = new Set<number>()
  for (const id of ids) {
    const page = await pageOf(shield, id)
    paths.add(`${API}${id}/`)
    if (page?.htmlPath !== undefined) paths.add(`${API}find/?html_path=${encodeURIComponent(page.htmlPath)}`)
    for (let current = page; current !== undefined; current = current.parentId === null ? undefined : await pageOf(shield, current.parentId)) {
      if (chain.has(current.id)) break
      chain.add(current.id)
    }
  }
  for (const id of chain) {
    paths.add(`${API}${id}/`)
    for (const child of (await listIds(shield, `child_of=${id}&limit=20`)).ids) paths.add(`${API}${child}/`)
  }
  for (const path of listsAround([...chain])) paths.add(path)
  for (const id of ids.slice(0, 20)) for (const child of (await listIds(shield, `child_of=${id}&limit=20`)).ids) paths.add(`${API}?ancestor_of=${child}`)
  for (const id of spread) {
    paths.add(`${API}${id}/`)
    paths.add(`${API}?child_of=${id}`)
  }
  for (const path of [`${API}?limit=20`, `${API}?show_in_menus=true&limit=20`, `${API}?type=cms.GenericPage&limit=20`]) paths.add(path)
  return [...paths]
}

interface Precision {
  readonly kind: string
  readonly sample: number
  readonly changed: number
  readonly purged: number
  readonly stale: number
  readonly keysPerAnswer: readonly number[]
  readonly purgeRequests: number
  readonly purgeBytes: readonly number[]
}

/**
 * Takes the sample's answers, runs the edit (a change at the CMS and a PURGE of `announce` at the
 * syncing instance), waits for its purges to arrive and settle, and takes the answers again.
 */
async function measure(
  cluster: BenchCluster, varnish: VarnishRecorder, kind: string, sample: readonly string[], act: () => Promise<void>, announce: string,
): Promise<Precision> {
  const before = await fetchAll(cluster.leader, sample)
  const from = varnish.purges.length
  await act()
  const purge = await call(`${cluster.leader.origin}${announce}`, { method: 'PURGE', timeoutMs: 10_000 })
  if (purge.status !== 200) throw new Error(`PURGE ${announce}: ${purge.status}`)
  await waitFor(`a purge for the ${kind}`, 180_000, 5, async () => (varnish.purges.length > from ? true : undefined))
  for (let seen = -1, deadline = Date.now() + 30_000; seen !== varnish.purges.length && Date.now() < deadline; ) {
    seen = varnish.purges.length
    await sleep(QUIET_MS)
  }
  const purges = varnish.purges.slice(from)
  const purgedKeys = new Set(purges.flatMap((each) => each.keys))
  const after = await fetchAll(cluster.leader, sample)
  let changed = 0
  let purged = 0
  let stale = 0
  for (const [path, seen] of before) {
    const isChanged = after.get(path)?.state !== seen.state
    const isPurged = seen.keys.some((key) => purgedKeys.has(key))
    if (isChanged) changed++
    if (isPurged) purged++
    if (isChanged && !isPurged) stale++
  }
  return {
    kind,
    sample: before.size,
    changed,
    purged,
    stale,
    keysPerAnswer: [...before.values()].map((seen) => seen.keys.length).sort((a, b) => a - b),
    purgeRequests: purges.length,
    purgeBytes: purges.map((each) => each.keys.join(' ').length).sort((a, b) => a - b),
  }
}

/** The children of a page, every window of them. */
async function childIds(shield: Shield, id: number): Promise<number[]> {
  const found: number[] = []
  for (let offset = 0; ; offset += 20) {
    const { total, ids } = await listIds(shield, `child_of=${id}&offset=${offset}&limit=20`)
    found.push(...ids)
    if (offset + 20 >= total || ids.length === 0) return found
  }
}

const subtreeSize = async (shield: Shield, id: number) => (await listIds(shield, `descendant_of=${id}&limit=1`)).total + 1

/**
 * Moves pages below `into` at the CMS until its subtree holds `SUBTREE_PAGES`: whole top-level
 * sections first, then the children of one. Returns the size and a page that moved.
 */
async function growSubtree(ctx: BenchContext, cluster: BenchCluster, into: number, donors: readonly number[]): Promise<{ size: number; moved: number }> {
  // A page whose slug a child of `into` already has cannot move there (Wagtail refuses it): skipped.
  const nest = async (id: number): Promise<boolean> => {
    try {
      await postJson(`${ctx.origin.control}/mutate`, { op: 'nest', id, parentId: into }, 10_000)
      return true
    } catch (error) {
      if (error instanceof Error && error.message.includes('slug already in use')) return false
      throw error
    }
  }
  let size = await subtreeSize(cluster.leader, into)
  let moved: number | undefined
  for (const donor of donors) {
    if (size >= SUBTREE_PAGES) break
    const donorSize = await subtreeSize(cluster.leader, donor)
    if (size + donorSize <= SUBTREE_PAGES + 50 && (await nest(donor))) {
      moved ??= donor
      size += donorSize
      continue
    }
    for (const child of await childIds(cluster.leader, donor)) {
      if (size >= SUBTREE_PAGES) break
      const childSize = await subtreeSize(cluster.leader, child)
      if (!(await nest(child))) continue
      moved ??= child
      size += childSize
    }
  }
  if (moved === undefined) throw new Error(`no page to move below ${into}`)
  return { size, moved }
}

/** The first of `candidates` without a child of `id`'s slug: where Wagtail lets `id` move. */
async function freeParentFor(shield: Shield, id: number, candidates: readonly number[]): Promise<number> {
  const response = await settledGet(`${shield.origin}${API}${id}/`)
  const slug = (JSON.parse(response.body.toString('utf8')) as { meta: { slug: string } }).meta.slug
  for (const candidate of candidates) {
    if ((await listIds(shield, `child_of=${candidate}&slug=${encodeURIComponent(slug)}&limit=1`)).total === 0) return candidate
  }
  throw new Error(`no parent for page ${id} without a child of slug ${slug}`)
}

export async function purgePrecision(ctx: BenchContext, cluster: BenchCluster, varnish: VarnishRecorder, title: string): Promise<void> {
  const { rows, results, addCheck, log } = ctx.recorder
  const leader = cluster.leader
  const rootId = (await listIds(leader, 'limit=1')).ids[0]!
  const landings = (await listIds(leader, `child_of=${rootId}&type=cms.LandingPage&limit=20`)).ids
  const spread = (await listIds(leader, `descendant_of=${landings.at(-1)!}&limit=20`)).ids
  const sections = (await listIds(leader, `descendant_of=${landings[0]!}&type=cms.HealthInsuranceSection&limit=20`)).ids
  const withIntro = (await listIds(leader, `descendant_of=${landings[1]!}&type=cms.GenericPage&limit=20`)).ids
  const measured: Precision[] = []

  // Retitle: a section with children (their details show its title).
  const retitled = sections[0]!
  measured.push(await measure(cluster, varnish, 'retitle', await sampleAround(leader, [retitled], spread, []), async () => {
    await postJson(`${ctx.origin.control}/edit`, { id: retitled }, 10_000)
  }, `${API}${retitled}/`))

  // Body-only edit: a change only the page's detail shows.
  const edited = withIntro[0]!
  measured.push(await measure(cluster, varnish, 'body edit', await sampleAround(leader, [edited], spread, []), async () => {
    await postJson(`${ctx.origin.control}/mutate`, { op: 'body', id: edited }, 10_000)
  }, `${API}${edited}/`))

  // Move: a top-level section grown to a subtree of SUBTREE_PAGES (unmeasured), moved below another.
  const [moving, ...others] = landings.slice(2)
  const destination = await freeParentFor(leader, moving!, others)
  const donors = others.filter((id) => id !== destination)
  const grown = await growSubtree(ctx, cluster, moving!, donors)
  // A page under another parent takes a listing pass, which brings every move at once.
  await call(`${leader.origin}${API}${grown.moved}/`, { method: 'PURGE', timeoutMs: 10_000 })
  await waitFor('the grown subtree served', 120_000, 50, async () => ((await subtreeSize(leader, moving!)) >= grown.size ? true : undefined))
  await sleep(2_000)
  const subtree = await subtreeIds(leader, moving!)
  log(`  move: a subtree of ${fmtInt(subtree.length)} pages below page ${moving!}`)
  measured.push(await measure(cluster, varnish, `move of a ${fmtInt(subtree.length)}-page subtree`, await sampleAround(leader, subtree, spread, listsAround([destination!])), async () => {
    await postJson(`${ctx.origin.control}/mutate`, { op: 'nest', id: moving!, parentId: destination! }, 10_000)
  }, `${API}${moving!}/`))

  // Publish and unpublish: a page created and unpublished (unmeasured), then published, then unpublished.
  const created = await postJson<{ id: number; parentId: number }>(`${ctx.origin.control}/mutate`, { op: 'create' }, 10_000)
  await call(`${leader.origin}${API}${created.id}/`, { method: 'PURGE', timeoutMs: 10_000 })
  await waitFor('the created page served', 180_000, 20, async () => ((await pageOf(leader, created.id)) ? true : undefined))
  await postJson(`${ctx.origin.control}/mutate`, { op: 'unpublish', id: created.id }, 10_000)
  await call(`${leader.origin}${API}${created.id}/`, { method: 'PURGE', timeoutMs: 10_000 })
  await waitFor('the unpublished page gone', 180_000, 20, async () => ((await pageOf(leader, created.id)) ? undefined : true))
  await sleep(2_000)
  const aroundCreated = await sampleAround(leader, [created.parentId], spread, [`${API}${created.id}/`])
  measured.push(await measure(cluster, varnish, 'publish', aroundCreated, async () => {
    await postJson(`${ctx.origin.control}/mutate`, { op: 'publish', id: created.id }, 10_000)
  }, `${API}${created.id}/`))
  measured.push(await measure(cluster, varnish, 'unpublish', await sampleAround(leader, [created.id], spread, []), async () => {
    await postJson(`${ctx.origin.control}/mutate`, { op: 'unpublish', id: created.id }, 10_000)
  }, `${API}${created.id}/`))

  const keys = measured.flatMap((each) => each.keysPerAnswer).sort((a, b) => a - b)
  const summary = measured.map((each) => {
    const ratio = each.purged / Math.max(1, each.changed)
    log(`  ${each.kind}: ${each.changed} of ${each.sample} answers changed, ${each.purged} purged (${ratio.toFixed(2)}), ${each.stale} stale; ` +
      `${each.purgeRequests} purge requests, ${each.purgeBytes.at(-1) ?? 0} bytes of keys at most`)
    const ratioCheck = addCheck(check(`${title}: ${each.kind}, answers purged ÷ changed`, ratio, '<=', RATIO_TARGET))
    const staleCheck = addCheck(check(`${title}: ${each.kind}, changed answers not purged`, each.stale, '==', 0))
    return { each, ratio, met: `${verdict(ratioCheck)} / ${verdict(staleCheck)}` }
  })
  for (const { each, ratio, met } of summary) {
    rows.push({
      scenario: `${title}: ${each.kind}, answers purged ÷ answers whose bytes changed (sample of ${fmtInt(each.sample)} cached answers)`,
      shield: `${ratio.toFixed(2)} (${each.purged} ÷ ${each.changed}; ${each.stale} stale); ${each.purgeRequests} purge request${each.purgeRequests === 1 ? '' : 's'}, ` +
        `${fmtInt(percentileOfSorted(each.purgeBytes, 50))} bytes of keys median, ${fmtInt(each.purgeBytes.at(-1) ?? 0)} max`,
      fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
      target: `≤ ${RATIO_TARGET} / 0 stale`,
      met,
    })
  }
  rows.push({
    scenario: `${title}: surrogate keys per answer over every sample`,
    shield: `${percentileOfSorted(keys, 50)} median, ${keys.at(-1)} max (${fmtInt(keys.length)} answers)`,
    fastify: '—', node: '—', vsFastify: '—', vsNode: '—',
    target: '—',
    met: '—',
  })
  const existing = (results.purge ?? {}) as Record<string, unknown>
  results.purge = {
    ...existing,
    precision: measured.map((each) => ({ ...each, keysPerAnswer: undefined, keysMedian: percentileOfSorted(each.keysPerAnswer, 50), keysMax: each.keysPerAnswer.at(-1) })),
  }
}
