/**
 * `?fields=`: Wagtail's parser (`utils.parse_fields_parameter`, ported statement by statement so error
 * texts and positions match) and the serializer field selection (`_get_serializer_class`, docs/wagtail-compatibility.md#response-bodies).
 * @module
 */
import { badRequest } from './api-errors.js'
import { isPySpace } from './python-semantics.js'

/** `(name, negated, sub-fields or null)` as the Python parser returns it. */
export type FieldSpec = readonly [name: string, negated: boolean, subFields: FieldSpec[] | null]

export class FieldsParseError extends Error {}

const ALNUM = /^[\p{L}\p{N}]$/u

/** Throws `FieldsParseError` with Wagtail's exact message (positions count code points). */
export function parseFieldsParameter(input: string): FieldSpec[] {
  const chars = Array.from(input)
  const total = chars.length
  const unexpected = (pos: number): FieldsParseError =>
    new FieldsParseError(`unexpected char '${chars[pos] as string}' at position ${pos}`)

  const parseIdentifier = (start: number): { ident: string; negated: boolean; pos: number } => {
    let pos = start
    let firstChar = true
    let negated = false
    let ident = ''
    while (pos < total) {
      const char = chars[pos] as string
      if (char === '(' || char === ')' || char === ',') {
        if (!ident) throw unexpected(pos)
        if ((ident === '*' || ident === '_') && char === '(') throw unexpected(pos)
        return { ident, negated, pos }
      } else if (char === '-') {
        if (!firstChar) throw unexpected(pos)
        negated = true
      } else if (char === '*' || char === '_') {
        if (ident && char === '*') throw unexpected(pos)
        ident += char
      } else if (ALNUM.test(char)) {
        if (ident === '*') throw unexpected(pos)
        ident += char
      } else if (isPySpace(char)) {
        throw new FieldsParseError(`unexpected whitespace at position ${pos}`)
      } else {
        throw unexpected(pos)
      }
      firstChar = false
      pos++
    }
    return { ident, negated, pos }
  }

  const parseFields = (start: number, expectCloseBracket: boolean): { fields: FieldSpec[]; pos: number } => {
    let pos = start
    let firstIdent: string | undefined
    let isFirst = true
    const fields: FieldSpec[] = []
    while (pos < total) {
      let subFields: FieldSpec[] | null = null
      const parsed = parseIdentifier(pos)
      const { ident, negated } = parsed
      pos = parsed.pos
      if (ident === '*' || ident === '_') {
        if (!isFirst) throw new FieldsParseError(`'${ident}' must be in the first position`)
        if (negated) throw new FieldsParseError(`'${ident}' cannot be negated`)
      }
      if (pos < total && chars[pos] === '(') {
        if (negated) throw new FieldsParseError(`unexpected char '(' at position ${pos}`)
        const nested = parseFields(pos + 1, true)
        subFields = nested.fields
        pos = nested.pos
      }
      if (isFirst) {
        firstIdent = ident
      } else {
        if (firstIdent === '_' && negated) throw new FieldsParseError("negated fields with '_' doesn't make sense")
        if (firstIdent === '*' && !negated && !(subFields && subFields.length > 0)) {
          throw new FieldsParseError("additional fields with '*' doesn't make sense")
        }
      }
      fields.push([ident, negated, subFields])
      if (pos < total && chars[pos] === ')') {
        if (!expectCloseBracket) throw new FieldsParseError(`unexpected char ')' at position ${pos}`)
        return { fields, pos: pos + 1 }
      }
      if (pos < total && chars[pos] === ',') {
        pos++
        if (pos >= total || chars[pos] === ',') throw new FieldsParseError(`unexpected char ',' at position ${pos}`)
      }
      isFirst = false
    }
    if (expectCloseBracket) throw new FieldsParseError('unexpected end of input (did you miss out a close bracket?)')
    return { fields, pos }
  }

  return parseFields(0, false).fields
}

/** Which serializer is being configured (docs/wagtail-compatibility.md#response-bodies). */
export type FieldView = 'listing' | 'detail' | 'nested'

/** The fields a serializer emits, in output-relevant order, with nested plans for relations. */
export interface FieldPlan {
  /** Selected fields in `all_fields` order (body fields then meta fields). */
  readonly fields: readonly string[]
  /**
   * Nested serializer plans for selected relation fields (`alias_of`): built, as Wagtail builds
   * them, so that their sub-fields are checked; `alias_of` is then written with the nested
   * defaults whatever they select (`PageAliasOfField`).
   */
  readonly children: ReadonlyMap<string, FieldPlan>
}

/** `PagesAPIViewSet.meta_fields` (docs/wagtail-compatibility.md#response-bodies). */
export const META_FIELDS: readonly string[] = [
  'type', 'detail_url', 'html_url', 'slug', 'show_in_menus', 'seo_title', 'search_description',
  'first_published_at', 'alias_of', 'parent', 'locale',
]
export const META_FIELD_SET: ReadonlySet<string> = new Set(META_FIELDS)

const LISTING_DEFAULT = ['id', 'type', 'detail_url', 'title', 'html_url', 'slug', 'first_published_at']
const NESTED_DEFAULT = ['id', 'type', 'detail_url', 'title', 'html_url']
/** Django relations among the page fields; `parent` is a method, `locale` is not modelled as a relation. */
const RELATIONS = new Set(['alias_of'])

/**
 * `_get_serializer_class`: start from the view's defaults (or all / none for `*` / `_`), apply additions
 * and removals, reject unknown names and sub-fields on non-relations.
 * @param extraFields the model's type-specific `api_fields`, in order.
 */
export function buildFieldPlan(view: FieldView, extraFields: readonly string[], config: readonly FieldSpec[], i18n = false): FieldPlan {
  const allFields = [...new Set(['id', 'title', ...extraFields, ...META_FIELDS])].filter(
    (field) => view === 'detail' || field !== 'parent',
  )
  let selected: Set<string>
  // `locale` is a default field only with WAGTAIL_I18N_ENABLED.
  if (view === 'detail') selected = new Set(allFields.filter((field) => i18n || field !== 'locale'))
  else if (view === 'nested') selected = new Set(NESTED_DEFAULT)
  else selected = new Set(i18n ? [...LISTING_DEFAULT, 'locale'] : LISTING_DEFAULT)

  let rest = config
  const first = config[0]
  if (first && first[0] === '*') {
    selected = new Set(allFields)
    rest = config.slice(1)
  } else if (first && first[0] === '_') {
    selected = new Set()
    rest = config.slice(1)
  }

  const mentioned = new Set<string>()
  const subFields = new Map<string, FieldSpec[]>()
  for (const [name, negated, sub] of rest) {
    if (negated) {
      selected.delete(name)
    } else {
      selected.add(name)
      if (sub && sub.length > 0) subFields.set(name, sub)
    }
    mentioned.add(name)
  }

  const known = new Set(allFields)
  const unknown = [...mentioned].filter((name) => !known.has(name)).sort()
  if (unknown.length > 0) throw badRequest(`unknown fields: ${unknown.join(', ')}`)

  const fields = allFields.filter((field) => selected.has(field))
  const children = new Map<string, FieldPlan>()
  for (const field of fields) {
    if (RELATIONS.has(field)) {
      children.set(field, buildFieldPlan('nested', [], subFields.get(field) ?? []))
    } else if (subFields.has(field)) {
      throw badRequest(`'${field}' does not support nested fields`)
    }
  }
  return { fields, children }
}

/** Parses `?fields=` and builds the plan; syntax errors become `fields error: …` (docs/wagtail-compatibility.md#error-texts). */
export function fieldPlanFromQuery(view: FieldView, extraFields: readonly string[], fieldsParam: string | undefined, i18n = false): FieldPlan {
  let config: FieldSpec[] = []
  if (fieldsParam !== undefined) {
    try {
      config = parseFieldsParameter(fieldsParam)
    } catch (error) {
      if (error instanceof FieldsParseError) throw badRequest(`fields error: ${error.message}`)
      throw error
    }
  }
  return buildFieldPlan(view, extraFields, config, i18n)
}
