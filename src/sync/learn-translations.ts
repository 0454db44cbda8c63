/**
 * Learns which pages translate which (docs/wagtail-compatibility.md#translations). The API shows no
 * translation key, but `?translation_of=<id>` lists a page's other translations on the Site, so one
 * request per group of translations tells the whole group. A page keeps its key for life (Wagtail
 * sets it when the page is created or copied for translation), so a sync asks only about pages new
 * to the Site: the first sync of a Site in several languages asks once per group, later ones once
 * per page created. A Site in one language (or none shown: i18n off) asks nothing.
 * @module
 */
import { createError } from '../errors.js'
import { getMember, parseJsonSpans } from '../json/json-spans.js'
import { withTranslations } from '../tree/build-snapshot.js'
import { localeOf, localesOf } from '../tree/page-meta.js'
import type { Snapshot } from '../tree/snapshot.js'
import { TranslationGroups } from '../tree/translations.js'
import { mapBounded } from './map-bounded.js'
import { readInteger } from './read-page-fields.js'
import { badStatusError, isJson, type UpstreamGet } from './upstream-port.js'

export interface LearnTranslationsDeps {
  readonly get: UpstreamGet
  /** The pages endpoint, as the sync reads it. */
  readonly pagesPath: string
  readonly concurrency: number
}

export interface LearnTranslationsRequest {
  /** The CMS's largest page size; `null` when it has none. */
  readonly pageSize: number | null
  readonly signal: AbortSignal
}

/** Wagtail's default page size: what a CMS without a maximum is asked for, a group rarely being longer. */
const DEFAULT_LIMIT = 20

/** The ids of every other translation of `id` on the Site, page by page of the answer. */
async function translationIdsOf(deps: LearnTranslationsDeps, request: LearnTranslationsRequest, id: number): Promise<number[]> {
  const limit = request.pageSize ?? DEFAULT_LIMIT
  const ids: number[] = []
  // Bounded by the answer: each round reads `limit` more of `total_count`, and an empty page ends it.
  for (let offset = 0; ; offset += limit) {
    const path = `${deps.pagesPath}?translation_of=${id}&fields=_,id&offset=${offset}&limit=${limit}`
    const answer = await deps.get(path, request.signal)
    if (answer.status !== 200) throw badStatusError(answer, `${path}: the CMS answered ${answer.status}`)
    if (!isJson(answer)) throw createError('UPSTREAM_BAD_RESPONSE', `${path}: content type ${answer.contentType || '(none)'}`)
    let root
    try {
      root = parseJsonSpans(answer.text)
    } catch (error) {
      throw createError('UPSTREAM_BAD_RESPONSE', `${path}: malformed JSON`, { cause: error })
    }
    const total = readInteger(getMember(getMember(root, 'meta'), 'total_count'), 'meta.total_count', path)
    const items = getMember(root, 'items')
    if (items?.kind !== 'array') throw createError('UPSTREAM_BAD_RESPONSE', `${path}: items is not an array`)
    for (const item of items.items) ids.push(readInteger(getMember(item, 'id'), 'id', path))
    if (items.items.length === 0 || offset + limit >= total) return ids
  }
}

/**
 * The translation groups of `candidate`'s pages: `previous`'s for the pages it already held, asked
 * of the CMS for the others. `undefined` when the Site shows fewer than two languages (none is
 * needed: `translationsOf`). Returns `previous.translations` itself when nothing is new or gone.
 */
export async function learnTranslations(
  deps: LearnTranslationsDeps,
  request: LearnTranslationsRequest,
  candidate: Snapshot,
  previous: Snapshot | undefined,
): Promise<TranslationGroups | undefined> {
  if (localesOf(candidate).size < 2) return undefined
  const known = previous?.translations
  const onSite = (id: number) => candidate.byId.has(id)
  const base = known === undefined ? TranslationGroups.NONE : known.restrictedTo(onSite)
  // Wagtail keeps one page per language in a group (`translation_key` and locale are unique
  // together): the pages of one language are asked about side by side without two of them ever
  // telling the same group, and a language at a time, the largest first, none is asked twice.
  const unknownByLocale = new Map<string | null, number[]>()
  for (const page of candidate.pages) {
    if (known !== undefined && previous!.byId.has(page.id)) continue
    const locale = localeOf(page)
    const ids = unknownByLocale.get(locale)
    if (ids) ids.push(page.id)
    else unknownByLocale.set(locale, [page.id])
  }
  if (unknownByLocale.size === 0) return base
  const answered = new Set<number>()
  const lists: number[][] = []
  for (const ids of [...unknownByLocale.values()].sort((a, b) => b.length - a.length)) {
    const asked = ids.filter((id) => !answered.has(id))
    lists.push(...await mapBounded(asked, deps.concurrency, request.signal, async (id) => {
      const others = await translationIdsOf(deps, request, id)
      for (const other of others) answered.add(other)
      return [id, ...others.filter(onSite)]
    }))
  }
  return TranslationGroups.of([...base.groups, ...lists])
}

/**
 * `candidate` with its translation groups learned: itself when they are the ones it has, else
 * sealed again with them (a kept snapshot, `candidate === previous`, as the next version).
 */
export async function settleTranslations(
  deps: LearnTranslationsDeps,
  request: LearnTranslationsRequest,
  candidate: Snapshot,
  previous: Snapshot | undefined,
): Promise<Snapshot> {
  const translations = await learnTranslations(deps, request, candidate, previous)
  if (translations === candidate.translations) return candidate
  return withTranslations(candidate, translations, candidate === previous ? candidate.version + 1 : candidate.version)
}
