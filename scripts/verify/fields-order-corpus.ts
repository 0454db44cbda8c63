/**
 * The corpus's `fields` and `order` part: what a website's server asks (docs/operations.md,
 * "Verifying cms-shield against your CMS"). `fields` in every form Wagtail's parser takes — names,
 * `*`, `_`, `-name`, `_,name`, nested `name(sub)` — and the errors of unknown and detail-only
 * names, on listings with and without `type` and on details; `order` by `id`, first publication
 * and each type's own date fields, on selections whose values are distinct and on selections where
 * two pages share a value or one has none (the database decides those, so the CMS answers). Each
 * request's kind names its form, so that the report counts the CMS requests each form cost. Pure
 * and deterministic: a random stream of its own, from the seed.
 * @module
 */
import { seededRandom, type Random } from './prng.js'
import { listingOf, pair } from './query-text.js'
import type { ApiPaths, RequestDraft, SiteModel, SitePage, SiteType } from './types.js'

/** Kinds of this part start with one of these; the report counts the CMS requests they cost. */
export const FIELDS_KIND = 'fields: '
export const ORDER_KIND = 'order: '

/** `[form, value]`: every form, on fields every page type has. */
const GENERIC_FIELDS: readonly (readonly [string, string])[] = [
  ['names', 'title,slug'], ['names', 'show_in_menus,seo_title,search_description'], ['*', '*'], ['_', '_'], ['-name', '-title'],
  ['-name', '-detail_url,-html_url'], ['_,name', '_,title'], ['_,name', '_,title,html_url'], ['_,name', '_,id,locale'], ['names', 'locale'],
  ['*,-name', '*,-locale'], ['name(sub)', 'alias_of(title)'], ['name(sub)', '_,alias_of(_,id)'], ['unknown', 'nope'], ['unknown', 'title,nope'],
  ['name(sub) of a value', 'title(x)'], ['names', 'first_published_at,-slug'],
]
/** On a listing, `parent` is a detail-only field: Wagtail's error. */
const LISTING_ONLY: readonly (readonly [string, string])[] = [['detail-only', 'parent'], ['detail-only', '_,parent']]
const DETAIL_ONLY: readonly (readonly [string, string])[] = [['names', 'parent'], ['_,name', '_,parent'], ['name(sub)', 'parent(title)']]

const GENERIC_NAMES = new Set(['id', 'title', 'type', 'detail_url', 'html_url', 'slug', 'show_in_menus', 'seo_title', 'search_description',
  'first_published_at', 'alias_of', 'parent', 'locale'])

interface Ctx {
  readonly site: SiteModel
  readonly paths: ApiPaths
  readonly r: Random
}

const listing = (ctx: Ctx, query: readonly string[], kind: string): RequestDraft => ({ view: 'listing', target: listingOf(ctx.paths.pages, query), kind })

/** A type's own fields (not the ones every page has), from its `fields=*`. */
const ownFields = (type: SiteType): string[] => type.fields.filter((field) => !GENERIC_NAMES.has(field))

function fieldsCoverage(ctx: Ctx): RequestDraft[] {
  const { r, site } = ctx
  const drafts: RequestDraft[] = []
  const typed = site.types.filter((type) => ownFields(type).length > 0)
  for (const [form, value] of [...GENERIC_FIELDS, ...LISTING_ONLY]) {
    drafts.push(listing(ctx, [pair('fields', value)], `${FIELDS_KIND}${form} · listing`))
    const type = r.pick(typed.length > 0 ? typed : site.types)
    drafts.push(listing(ctx, [pair('type', type.name), pair('fields', value)], `${FIELDS_KIND}${form} · typed listing`))
    drafts.push(listing(ctx, [pair('child_of', 'root'), pair('fields', value), pair('limit', '5')], `${FIELDS_KIND}${form} · children`))
  }
  for (const [form, value] of [...GENERIC_FIELDS, ...DETAIL_ONLY]) {
    drafts.push({ view: 'detail', target: listingOf(`${ctx.paths.pages}${r.pick(site.pages).id}/`, [pair('fields', value)]), kind: `${FIELDS_KIND}${form} · detail` })
  }
  for (const type of typed) {
    const field = r.pick(ownFields(type))
    const page = site.pages.find((each) => each.type === type.name)
    for (const [form, value] of [['own names', field], ['-name', `-${field}`], ['_,name', `_,${field}`], ['*,-name', `*,-${field}`], ['unknown', `${field},nope`]] as const) {
      drafts.push(listing(ctx, [pair('type', type.name), pair('fields', value)], `${FIELDS_KIND}${form} · typed listing`))
      if (page !== undefined) drafts.push({ view: 'detail', target: listingOf(`${ctx.paths.pages}${page.id}/`, [pair('fields', value)]), kind: `${FIELDS_KIND}${form} · detail` })
    }
    for (const [name, keys] of type.nested) {
      drafts.push(listing(ctx, [pair('type', type.name), pair('fields', `_,${name}(${keys.length > 0 ? r.pick(keys) : '*'})`)], `${FIELDS_KIND}own name(sub) · typed listing`))
    }
  }
  return drafts
}

/** A selection of pages the corpus can name, with the pages it holds as discovery saw them. */
interface Selection {
  readonly query: readonly string[]
  readonly pages: readonly SitePage[]
  readonly type?: SiteType
}

function selections(ctx: Ctx): Selection[] {
  const { site, r } = ctx
  const found: Selection[] = [{ query: [], pages: site.pages }]
  const locales = [...new Set(site.pages.map((page) => page.locale).filter((locale) => locale !== undefined))]
  if (locales.length > 1) for (const locale of locales) found.push({ query: [pair('locale', locale)], pages: site.pages.filter((page) => page.locale === locale) })
  for (const type of site.types) {
    const pages = site.pages.filter((page) => page.type === type.name)
    found.push({ query: [pair('type', type.name)], pages, type })
    for (const locale of locales.length > 1 ? locales : []) {
      found.push({ query: [pair('type', type.name), pair('locale', locale)], pages: pages.filter((page) => page.locale === locale), type })
    }
    // One page of a type with date fields: a value of its own, never shared.
    if ((type.dates?.length ?? 0) > 0 && pages.length > 0) {
      const one = r.pick(pages)
      found.push({ query: [pair('type', type.name), pair('id', String(one.id))], pages: [one], type })
    }
  }
  // A slug two translations share, and one page alone.
  const slugs = new Map<string, SitePage[]>()
  for (const page of site.pages) slugs.set(page.slug, [...(slugs.get(page.slug) ?? []), page])
  const shared = [...slugs.values()].find((pages) => pages.length > 1)
  if (shared !== undefined) found.push({ query: [pair('slug', shared[0]!.slug)], pages: shared })
  const one = r.pick(site.pages)
  found.push({ query: [pair('id', String(one.id))], pages: [one] })
  return found
}

/** `distinct`: every page has a value and no two share one (the order is the snapshot's to give); else `ties` or `empty`. */
function tieState(values: readonly (string | null | undefined)[]): 'distinct' | 'ties' | 'empty' {
  if (values.some((value) => value === null || value === undefined)) return 'empty'
  return new Set(values).size === values.length ? 'distinct' : 'ties'
}

function orderCoverage(ctx: Ctx): RequestDraft[] {
  const { r, site } = ctx
  const drafts: RequestDraft[] = []
  const page = (query: readonly string[]): string[] => (r.chance(0.3) ? [...query, pair('limit', String(r.int(1, 5))), pair('offset', String(r.int(0, 3)))] : [...query])
  for (const selection of selections(ctx)) {
    const published = tieState(selection.pages.map((each) => each.firstPublishedAt))
    for (const order of ['first_published_at', '-first_published_at']) {
      drafts.push(listing(ctx, page([...selection.query, pair('order', order)]), `${ORDER_KIND}${order} (${published})`))
    }
    if (selection.query.length <= 1) for (const order of ['id', '-id']) drafts.push(listing(ctx, page([...selection.query, pair('order', order)]), `${ORDER_KIND}${order}`))
    for (const field of selection.type?.dates ?? []) {
      const byId = new Map(field.values)
      const state = tieState(selection.pages.map((each) => byId.get(each.id)))
      for (const order of [field.name, `-${field.name}`]) drafts.push(listing(ctx, page([...selection.query, pair('order', order)]), `${ORDER_KIND}own date ${order} (${state})`))
    }
  }
  // On a detail, an order changes nothing: the page is looked up in the ordered queryset.
  const one = r.pick(site.pages)
  drafts.push({ view: 'detail', target: listingOf(`${ctx.paths.pages}${one.id}/`, [pair('order', '-first_published_at')]), kind: `${ORDER_KIND}-first_published_at · detail` })
  for (const type of site.types) {
    const field = type.dates?.[0]
    const own = site.pages.find((each) => each.type === type.name)
    if (field === undefined || own === undefined) continue
    drafts.push({ view: 'detail', target: listingOf(`${ctx.paths.pages}${own.id}/`, [pair('type', type.name), pair('order', `-${field.name}`)]), kind: `${ORDER_KIND}own date · detail` })
  }
  return drafts
}

/** This part of the corpus for `site`, the same for the same seed. */
export function fieldsOrderCoverage(site: SiteModel, paths: ApiPaths, seed: number): RequestDraft[] {
  const ctx: Ctx = { site, paths, r: seededRandom((seed ^ 0x5f0f) >>> 0) }
  return [...fieldsCoverage(ctx), ...orderCoverage(ctx)]
}
