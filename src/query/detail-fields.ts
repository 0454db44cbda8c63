/**
 * `?fields=` on a page's detail, decided from its stored detail (docs/wagtail-compatibility.md#detail-fields).
 * The detail view's default fields are all of the page type's fields (`locale` only with
 * i18n), so the stored detail holds every value a selection can name, in the serializer's
 * order: a selection is the stored members it keeps. What the stored detail cannot show goes to
 * the CMS: `locale` where it is not stored, sub-fields beyond a nested page's defaults, sub-fields
 * of any other field (a relation or an error only the model knows). Pure.
 * @module
 */
import type { ObjectNode } from '../json/json-spans.js'
import type { MemberSelection } from '../json/select-members.js'
import type { FieldSpec } from './fields-parameter.js'
import { wagtailErrors, type WagtailError } from './wagtail-messages.js'

export type DetailFields =
  /** The stored detail as it is. */
  | { readonly kind: 'all' }
  | { readonly kind: 'select'; readonly members: MemberSelection }
  | { readonly kind: 'error'; readonly error: WagtailError }
  | { readonly kind: 'forward'; readonly reason: string }

/** A nested page's default fields (`nested_default_fields`), and so all the stored nested object holds. */
const NESTED_DEFAULTS: ReadonlySet<string> = new Set(['id', 'type', 'detail_url', 'title', 'html_url'])
const NESTED_META: ReadonlySet<string> = new Set(['type', 'detail_url', 'html_url'])
/** The page's field that is a relation to another page, nested with its own fields. */
const PAGE_RELATION = 'alias_of'

const ALL: DetailFields = Object.freeze({ kind: 'all' })

/** Python's `sorted()` on str: by code point. */
function byCodePoint(a: string, b: string): number {
  const [x, y] = [Array.from(a, (c) => c.codePointAt(0)!), Array.from(b, (c) => c.codePointAt(0)!)]
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!
  return x.length - y.length
}

/** The names a configuration selects, starting from `defaults` (`*`: all, `_`: none), and every name it mentions. */
function applyConfig(config: readonly FieldSpec[], defaults: ReadonlySet<string>, all: readonly string[]): { selected: Set<string>; mentioned: Set<string>; sub: Map<string, readonly FieldSpec[]> } {
  const head = config[0]?.name
  const selected = new Set(head === '*' ? all : head === '_' ? [] : defaults)
  const mentioned = new Set<string>()
  const sub = new Map<string, readonly FieldSpec[]>()
  for (const spec of head === '*' || head === '_' ? config.slice(1) : config) {
    if (spec.negated) selected.delete(spec.name)
    else {
      selected.add(spec.name)
      if (spec.sub !== null && spec.sub.length > 0) sub.set(spec.name, spec.sub)
    }
    mentioned.add(spec.name)
  }
  return { selected, mentioned, sub }
}

/** A nested page's selection over the stored nested object; `undefined`: only the CMS can show it. */
function nestedSelection(config: readonly FieldSpec[]): MemberSelection | undefined {
  if (config[0]?.name === '*') return undefined
  const { selected, mentioned } = applyConfig(config, NESTED_DEFAULTS, [...NESTED_DEFAULTS])
  if ([...mentioned, ...selected].some((name) => !NESTED_DEFAULTS.has(name))) return undefined
  const meta = new Map<string, true>([...selected].filter((name) => NESTED_META.has(name)).map((name) => [name, true]))
  const members = new Map<string, true | MemberSelection>([...selected].filter((name) => !NESTED_META.has(name)).map((name) => [name, true]))
  if (meta.size > 0) members.set('meta', meta)
  return members
}

/**
 * @param config the parsed `fields` parameter.
 * @param detail the stored detail, parsed.
 */
export function detailFields(config: readonly FieldSpec[], detail: ObjectNode): DetailFields {
  const body = detail.entries.filter((entry) => entry.key !== 'meta').map((entry) => entry.key)
  const metaNode = detail.entries.find((entry) => entry.key === 'meta')?.value
  const meta = metaNode?.kind === 'object' ? metaNode.entries.map((entry) => entry.key) : []
  const stored = new Set([...body, ...meta])
  // Every page type has `locale`; the stored detail carries it only with i18n.
  const all = stored.has('locale') ? [...body, ...meta] : [...body, ...meta, 'locale']
  const { selected, mentioned, sub } = applyConfig(config, stored, all)

  const unknown = [...mentioned].filter((name) => !all.includes(name)).sort(byCodePoint)
  if (unknown.length > 0) return { kind: 'error', error: wagtailErrors.unknownFields(unknown) }
  if (!stored.has('locale') && selected.has('locale')) return { kind: 'forward', reason: 'locale is not in the stored detail' }
  for (const name of sub.keys()) if (name !== PAGE_RELATION || !selected.has(name)) return { kind: 'forward', reason: `sub-fields of ${name}` }
  const nested = sub.has(PAGE_RELATION) ? nestedSelection(sub.get(PAGE_RELATION)!) : undefined
  if (sub.has(PAGE_RELATION) && nested === undefined) return { kind: 'forward', reason: `sub-fields of ${PAGE_RELATION} the stored detail does not hold` }
  if (nested === undefined && selected.size === stored.size) return ALL

  const members = new Map<string, true | MemberSelection>(body.filter((name) => selected.has(name)).map((name) => [name, true]))
  const metaMembers = new Map<string, true | MemberSelection>(meta.filter((name) => selected.has(name)).map((name) => [name, name === PAGE_RELATION && nested ? nested : true]))
  // An empty meta is left out altogether, as the serializer does.
  if (metaMembers.size > 0) members.set('meta', metaMembers)
  return { kind: 'select', members }
}
