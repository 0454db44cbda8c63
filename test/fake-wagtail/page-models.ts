/**
 * The page models ("types") the fake CMS knows, with their type-specific API fields.
 *
 * Django models do not vanish when their last page is deleted, so a model stays known once seen
 * (docs/wagtail-compatibility.md#listing-parameters: `type=<any installed Page model>` is valid even with no page of it).
 * @module
 */
import type { FakePage } from './types.js'

/**
 * How a type-specific field filters (docs/wagtail-compatibility.md#field-filters): booleans and integers are converted (400 on
 * bad input), dates are parsed by Django (500 on bad input, verified `date=notadate`), the rest is exact.
 * Inferred from the first non-null value seen.
 */
export type FieldKind = 'boolean' | 'integer' | 'date' | 'other'

export interface PageModel {
  /** `app_label.ModelName` as pages carry it. */
  readonly name: string
  /** `ModelName`, used in `No <ModelName> matches the given query.` */
  readonly objectName: string
  /** Type-specific API fields in first-seen order (the model's `api_fields`). */
  readonly fields: string[]
  readonly kinds: Map<string, FieldKind>
}

/** Every Page subclass includes `wagtailcore.Page`; `?type=wagtailcore.Page` selects all pages. */
export const BASE_PAGE_MODEL: PageModel = { name: 'wagtailcore.Page', objectName: 'Page', fields: [], kinds: new Map() }

/** Names of the generic fields a type-specific field cannot shadow. */
const GENERIC_FIELDS = new Set([
  'id', 'title', 'type', 'detail_url', 'html_url', 'slug', 'show_in_menus', 'seo_title',
  'search_description', 'first_published_at', 'alias_of', 'parent', 'locale',
])

function kindOf(value: unknown): FieldKind | undefined {
  if (typeof value === 'boolean') return 'boolean'
  if (typeof value === 'number' && Number.isInteger(value)) return 'integer'
  if (value === null || value === undefined) return undefined
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value)) return 'date'
  return 'other'
}

function splitType(type: string): [appLabel: string, objectName: string] {
  const dot = type.indexOf('.')
  return dot < 0 ? ['', type] : [type.slice(0, dot), type.slice(dot + 1)]
}

/** Django's `apps.get_model(app_label, model_name)`: app label exact, model name case-insensitive. */
function modelKey(appLabel: string, modelName: string): string {
  return `${appLabel}.${modelName.toLowerCase()}`
}

export class PageModelRegistry {
  private readonly models = new Map<string, PageModel>([[modelKey('wagtailcore', 'Page'), BASE_PAGE_MODEL]])
  /** Exact `type` string → model, so per-page lookups skip the parsing. */
  private readonly byTypeString = new Map<string, PageModel>()

  observe(page: FakePage): void {
    const [appLabel, objectName] = splitType(page.type)
    const key = modelKey(appLabel, objectName)
    let model = this.models.get(key)
    if (!model) {
      model = { name: page.type, objectName, fields: [], kinds: new Map() }
      this.models.set(key, model)
    }
    this.byTypeString.set(page.type, model)
    const extra = page.extra
    if (!extra) return
    for (const field of Object.keys(extra)) {
      if (GENERIC_FIELDS.has(field)) continue
      if (!model.fields.includes(field)) model.fields.push(field)
      if (model.kinds.has(field)) continue
      const kind = kindOf(extra[field])
      if (kind) model.kinds.set(field, kind)
    }
  }

  /** The model of a page's `type`, as registered by `observe`. */
  ofPage(page: FakePage): PageModel {
    return this.byTypeString.get(page.type) ?? this.models.get(modelKey(...splitType(page.type))) ?? BASE_PAGE_MODEL
  }

  /**
   * Wagtail's `resolve_model_string`: exactly one dot, a known app label, a known model name in any case.
   * `undefined` = `LookupError`/`ValueError` → "type doesn't exist".
   */
  resolve(text: string): PageModel | undefined {
    const parts = text.split('.')
    if (parts.length !== 2) return undefined
    return this.models.get(modelKey(parts[0] as string, parts[1] as string))
  }
}

/** The type-specific fields of a page, in its own insertion order. */
export function pageExtraFields(page: FakePage): string[] {
  return Object.keys(page.extra ?? {}).filter((field) => !GENERIC_FIELDS.has(field))
}
