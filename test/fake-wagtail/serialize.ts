/**
 * Page → API object, with Wagtail's key order: `id`, then `meta` (only if non-empty), then the other
 * body fields (docs/wagtail-compatibility.md#response-bodies, `BaseSerializer.to_representation`).
 * @module
 */
import { META_FIELD_SET } from './fields-param.js'
import type { FieldPlan } from './fields-param.js'
import type { PageNode, SiteIndex } from './site-index.js'

/** The fixed serializer of `meta.parent` (`PageParentField`): it ignores `?fields=` sub-configuration. */
const PARENT_PLAN: FieldPlan = { fields: ['id', 'title', 'type', 'detail_url', 'html_url'], children: new Map() }

export interface SerializeOptions {
  /**
   * The page is serialised as its specific model (detail view, or a listing of exactly one type): its
   * `html_url` is the model's own (`detailHtmlUrl`). Listings of `Page` and nested objects use the
   * on-site address.
   */
  readonly specific: boolean
}

export function serializePage(
  index: SiteIndex,
  node: PageNode,
  plan: FieldPlan,
  options: SerializeOptions,
): Record<string, unknown> {
  const { page } = node
  const data: Record<string, unknown> = {}
  if (plan.fields.includes('id')) data['id'] = page.id
  const meta: Record<string, unknown> = {}
  for (const field of plan.fields) {
    if (!META_FIELD_SET.has(field)) continue
    meta[field] = metaValue(index, node, field, plan, options)
  }
  if (Object.keys(meta).length > 0) data['meta'] = meta
  for (const field of plan.fields) {
    if (field === 'id' || META_FIELD_SET.has(field)) continue
    data[field] = field === 'title' ? page.title : (page.extra?.[field] ?? null)
  }
  return data
}

function metaValue(index: SiteIndex, node: PageNode, field: string, plan: FieldPlan, options: SerializeOptions): unknown {
  const { page } = node
  switch (field) {
    case 'type':
      return page.type
    case 'detail_url':
      return node.detailUrl
    case 'html_url':
      return options.specific && page.detailHtmlUrl !== undefined ? page.detailHtmlUrl : node.htmlUrl
    case 'slug':
      return page.slug
    case 'show_in_menus':
      return page.showInMenus
    case 'seo_title':
      return page.seoTitle
    case 'search_description':
      return page.searchDescription
    case 'first_published_at':
      return page.firstPublishedAt
    case 'alias_of': {
      // A foreign key: the target is shown whether or not it is live (docs/wagtail-compatibility.md#response-bodies),
      // always with the nested defaults: `PageAliasOfField` ignores the sub-fields its plan checked.
      const target = page.aliasOf == null ? undefined : index.byId.get(page.aliasOf)
      return target ? serializePage(index, target, PARENT_PLAN, { specific: false }) : null
    }
    case 'parent': {
      // Only a parent inside the visible base queryset is shown, so the site root has `null` (docs/wagtail-compatibility.md#response-bodies).
      const parent = node.parent
      return parent && parent.live ? serializePage(index, parent, PARENT_PLAN, { specific: false }) : null
    }
    case 'locale':
      return page.locale ?? 'en'
    default:
      return null
  }
}
