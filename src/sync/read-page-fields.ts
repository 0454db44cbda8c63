/**
 * Reads the fields the index needs out of the CMS's own listing items and details, checking the
 * shape as it goes: a body that is not what Wagtail sends is refused, never guessed at.
 * @module
 */
import { createError } from '../errors.js'
import { getMember, getPath, type JsonNode } from '../json/json-spans.js'
import { TAPE_NULL, TAPE_NUMBER, TAPE_OBJECT, TAPE_TRUE, type JsonTape } from '../json/json-tape.js'

function fail(what: string, where: string): never {
  throw createError('UPSTREAM_BAD_RESPONSE', `${where}: ${what}`)
}

export function readInteger(node: JsonNode | undefined, what: string, where: string): number {
  if (node?.kind !== 'number' || !/^-?\d+$/.test(node.raw)) fail(`${what} is not an integer`, where)
  const value = Number(node.raw)
  if (!Number.isSafeInteger(value)) fail(`${what} is out of range`, where)
  return value
}

function readString(node: JsonNode | undefined, what: string, where: string): string {
  if (node?.kind !== 'string') fail(`${what} is not a string`, where)
  return node.value
}

/** Optional generic fields: Wagtail 8.0's swappable Page model may lack them (docs/wagtail-compatibility.md#response-bodies). */
function optionalString(node: JsonNode | undefined): string {
  return node?.kind === 'string' ? node.value : ''
}

export interface ListedFields {
  readonly id: number
  readonly type: string
  readonly title: string
  readonly slug: string
  /** `null` for a page that is not routable. */
  readonly htmlUrl: string | null
  /** Present when the listing was asked for them (`listing-fields.ts`). */
  readonly flags?: PageFlags
}

/** The generic fields the index filters on that the default listing leaves out. */
export interface PageFlags {
  readonly showInMenus: boolean
  readonly seoTitle: string
  readonly searchDescription: string
}

function readFlags(item: JsonNode): PageFlags | undefined {
  const show = getPath(item, ['meta', 'show_in_menus'])
  if (show === undefined) return undefined
  return {
    showInMenus: show.kind === 'true',
    seoTitle: optionalString(getPath(item, ['meta', 'seo_title'])),
    searchDescription: optionalString(getPath(item, ['meta', 'search_description'])),
  }
}

export function readListItem(item: JsonNode, where: string): ListedFields {
  if (item.kind !== 'object') fail('a listing item is not an object', where)
  return {
    id: readInteger(getMember(item, 'id'), 'id', where),
    type: readString(getPath(item, ['meta', 'type']), 'meta.type', where),
    title: readString(getMember(item, 'title'), 'title', where),
    slug: readString(getPath(item, ['meta', 'slug']), 'meta.slug', where),
    htmlUrl: optionalUrl(getPath(item, ['meta', 'html_url'])),
  }
}

/** A listing item's fields, with the extra flags when the listing carried them. */
export function readListItemWithFlags(item: JsonNode, where: string): ListedFields {
  const fields = readListItem(item, where)
  const flags = readFlags(item)
  return flags ? { ...fields, flags } : fields
}

function optionalUrl(node: JsonNode | undefined): string | null {
  return node?.kind === 'string' ? node.value : null
}

export interface DetailFields extends ListedFields, PageFlags {
  readonly parentId: number | null
}

export function readDetail(root: JsonNode, where: string): DetailFields {
  if (root.kind !== 'object') fail('the detail is not an object', where)
  const listed = readListItem(root, where)
  const parent = getPath(root, ['meta', 'parent'])
  if (parent === undefined) fail('meta.parent is missing', where)
  return {
    ...listed,
    showInMenus: getPath(root, ['meta', 'show_in_menus'])?.kind === 'true',
    seoTitle: optionalString(getPath(root, ['meta', 'seo_title'])),
    searchDescription: optionalString(getPath(root, ['meta', 'search_description'])),
    parentId: parent.kind === 'null' ? null : readInteger(getMember(parent, 'id'), 'meta.parent.id', where),
  }
}

// The same reads over a body parsed on a tape (`json-tape.ts`): a token index where the functions
// above take a node, -1 for a missing one.

export function readTapeInteger(tape: JsonTape, i: number, what: string, where: string): number {
  if (i < 0 || tape.kind(i) !== TAPE_NUMBER) fail(`${what} is not an integer`, where)
  const raw = tape.raw(i)
  if (!/^-?\d+$/.test(raw)) fail(`${what} is not an integer`, where)
  const value = Number(raw)
  if (!Number.isSafeInteger(value)) fail(`${what} is out of range`, where)
  return value
}

function readTapeString(tape: JsonTape, i: number, what: string, where: string): string {
  if (i < 0 || !tape.isString(i)) fail(`${what} is not a string`, where)
  return tape.stringValue(i)
}

function optionalTapeString(tape: JsonTape, i: number): string {
  return i >= 0 && tape.isString(i) ? tape.stringValue(i) : ''
}

function optionalTapeUrl(tape: JsonTape, i: number): string | null {
  return i >= 0 && tape.isString(i) ? tape.stringValue(i) : null
}

/** {@link readListItem} of value `item` on `tape`. */
export function readTapeListItem(tape: JsonTape, item: number, where: string): ListedFields {
  if (tape.kind(item) !== TAPE_OBJECT) fail('a listing item is not an object', where)
  const meta = tape.member(item, 'meta')
  const id = readTapeInteger(tape, tape.member(item, 'id'), 'id', where)
  const type = readTapeString(tape, tape.member(meta, 'type'), 'meta.type', where)
  const title = readTapeString(tape, tape.member(item, 'title'), 'title', where)
  const slug = readTapeString(tape, tape.member(meta, 'slug'), 'meta.slug', where)
  return { id, type, title, slug, htmlUrl: optionalTapeUrl(tape, tape.member(meta, 'html_url')) }
}

/** {@link readListItemWithFlags} of value `item` on `tape`. */
export function readTapeListItemWithFlags(tape: JsonTape, item: number, where: string): ListedFields {
  const fields = readTapeListItem(tape, item, where)
  const meta = tape.member(item, 'meta')
  const show = tape.member(meta, 'show_in_menus')
  if (show < 0) return fields
  const flags: PageFlags = {
    showInMenus: tape.kind(show) === TAPE_TRUE,
    seoTitle: optionalTapeString(tape, tape.member(meta, 'seo_title')),
    searchDescription: optionalTapeString(tape, tape.member(meta, 'search_description')),
  }
  const { id, type, title, slug, htmlUrl } = fields
  return { id, type, title, slug, htmlUrl, flags }
}

const DETAIL_KEYS = ['id', 'title', 'meta'] as const
const DETAIL_META_KEYS = ['type', 'slug', 'html_url', 'parent', 'show_in_menus', 'seo_title', 'search_description'] as const
const detailTokens = new Int32Array(DETAIL_KEYS.length)
const metaTokens = new Int32Array(DETAIL_META_KEYS.length)

/** {@link readDetail} of the body on `tape` (its root, token 0): each object read in one pass. */
export function readTapeDetail(tape: JsonTape, where: string): DetailFields {
  if (tape.kind(0) !== TAPE_OBJECT) fail('the detail is not an object', where)
  const root = tape.members(0, DETAIL_KEYS, detailTokens)
  const meta = tape.members(root[2] as number, DETAIL_META_KEYS, metaTokens)
  const parent = meta[3] as number
  // In readListItem's order, so that a bad detail is refused with the same message.
  const id = readTapeInteger(tape, root[0] as number, 'id', where)
  const type = readTapeString(tape, meta[0] as number, 'meta.type', where)
  const title = readTapeString(tape, root[1] as number, 'title', where)
  const slug = readTapeString(tape, meta[1] as number, 'meta.slug', where)
  if (parent < 0) fail('meta.parent is missing', where)
  return {
    id,
    type,
    title,
    slug,
    htmlUrl: optionalTapeUrl(tape, meta[2] as number),
    showInMenus: tape.kind(meta[4] as number) === TAPE_TRUE,
    seoTitle: optionalTapeString(tape, meta[5] as number),
    searchDescription: optionalTapeString(tape, meta[6] as number),
    parentId: tape.kind(parent) === TAPE_NULL ? null : readTapeInteger(tape, tape.member(parent, 'id'), 'meta.parent.id', where),
  }
}
