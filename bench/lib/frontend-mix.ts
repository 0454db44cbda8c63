/**
 * The `frontend` scenario's queries: what a site build asks of the pages API, derived from the
 * site itself (issue 35): for every page type its whole listing with every field (`fields=*`, a
 * page of the CMS's largest size at a time) and its ten newest; for every parent its children
 * with the fields a navigation needs, and its menu; the twenty newest pages; and 40 details with
 * every field. With a language, each query is asked for that language (`&locale=<code>`). Pure.
 * @module
 */

/** One live page as the fake CMS holds it (`GET /structure` of `bench/origin.ts`). */
export interface StructurePage {
  readonly id: number
  readonly type: string
  readonly parentId: number | null
  readonly locale: string
}

export interface SiteStructure {
  /** The CMS's WAGTAILAPI_LIMIT_MAX, `null` for none. */
  readonly limitMax: number | null
  readonly pages: readonly StructurePage[]
}

/** Details a build asks for with `?fields=*`. */
export const BUILD_DETAILS = 40
/** Wagtail's default page size, where the CMS has no maximum. */
const DEFAULT_LIMIT = 20

/**
 * The build's paths under `pagesPath` (`/api/v1/cms/pages/`), in the order a build asks them; with
 * `locale`, the pages of that language only, each query naming it.
 */
export function buildQueries(structure: SiteStructure, pagesPath: string, locale?: string): string[] {
  const pages = structure.pages.filter((page) => locale === undefined || page.locale === locale)
  const suffix = locale === undefined ? '' : `&locale=${encodeURIComponent(locale)}`
  const limit = structure.limitMax ?? DEFAULT_LIMIT
  const counts = new Map<string, number>()
  for (const page of pages) counts.set(page.type, (counts.get(page.type) ?? 0) + 1)
  const parents = [...new Set(pages.map((page) => page.parentId).filter((id): id is number => id !== null))]
  const paths: string[] = []
  for (const [type, count] of counts) {
    const typed = `${pagesPath}?type=${encodeURIComponent(type)}`
    for (let offset = 0; offset < count; offset += limit) paths.push(`${typed}&fields=*&limit=${limit}${offset === 0 ? '' : `&offset=${offset}`}${suffix}`)
    paths.push(`${typed}&order=-first_published_at&limit=10${suffix}`)
  }
  for (const parent of parents) {
    paths.push(`${pagesPath}?child_of=${parent}&fields=title,slug,seo_title,show_in_menus${suffix}`)
    paths.push(`${pagesPath}?child_of=${parent}&show_in_menus=true&fields=_,title,html_url${suffix}`)
  }
  paths.push(`${pagesPath}?order=-first_published_at&limit=20${suffix}`)
  // Details spread over the tree, the root left out.
  const detailed = pages.filter((page) => page.parentId !== null)
  const step = Math.max(1, Math.floor(detailed.length / BUILD_DETAILS))
  for (let n = 0; n < BUILD_DETAILS && n * step < detailed.length; n++) paths.push(`${pagesPath}${detailed[n * step]!.id}/?fields=*${suffix}`)
  return paths
}
