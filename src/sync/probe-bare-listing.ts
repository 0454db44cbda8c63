/**
 * Whether the CMS's listing can be read without `html_url` (`fields=-html_url`, along with the
 * extra fields the pass asks for) and the URL written back (`html-url-item.ts`) gives its default
 * items byte for byte. Asked once per process, on the first few items, as `probeListingFields`
 * asks about the extra fields; a CMS that refuses or answers in another layout keeps the listing
 * with `html_url`.
 * @module
 */
import { getMember, parseJsonSpans, type JsonNode } from '../json/json-spans.js'
import { htmlUrlOfItem, withHtmlUrl } from './html-url-item.js'
import { passFieldsParam, stripExtraFields, type ListingExtras } from './listing-fields.js'
import type { UpstreamGet } from './upstream-port.js'

function itemTexts(status: number, text: string, extras: ListingExtras | undefined): string[] | undefined {
  if (status !== 200) return undefined
  try {
    const list = getMember(parseJsonSpans(text), 'items')
    if (list?.kind !== 'array') return undefined
    return list.items.map((item: JsonNode) => (extras ? stripExtraFields(text, item, extras) : text.slice(item.start, item.end)))
  } catch {
    return undefined
  }
}

/** `undefined`: the listing is empty, nothing to compare (asked again at the next sync). */
export async function probeBareListing(get: UpstreamGet, pagesPath: string, extras: ListingExtras | undefined, signal?: AbortSignal): Promise<boolean | undefined> {
  const [plain, bare] = await Promise.all([
    get(`${pagesPath}?limit=3`, signal),
    get(`${pagesPath}?${passFieldsParam(extras, true)}limit=3`, signal),
  ])
  const want = itemTexts(plain.status, plain.text, undefined)
  const got = itemTexts(bare.status, bare.text, extras)
  if (want?.length === 0) return undefined
  if (!want || !got || got.length !== want.length) return false
  return want.every((item, i) => {
    const url = htmlUrlOfItem(item)
    return url !== undefined && htmlUrlOfItem(got[i]!) === undefined && withHtmlUrl(got[i]!, url) === item
  })
}
