/**
 * The pages API's three views (listing, detail, find), each as the steps that are its own: how it
 * plans a query (Wagtail's rules, `src/query/`), what it forwards and what that forward depends
 * on, and how it answers from the snapshot. What they share (the order of those steps, forwarding,
 * reading through) is `pages-service.ts`'s. Kept apart so a change to one view's rules touches
 * only its own entry here.
 * @module
 */
import { planDetail } from '../query/plan-detail.js'
import { planFind } from '../query/plan-find.js'
import { planListing } from '../query/plan-listing.js'
import type { DetailPlan, FindPlan, ListPlan } from '../query/plan-types.js'
import { djangoUrlencode, type QueryParams } from '../query/query-params.js'
import type { KnownAbsent } from '../query/known-absent.js'
import { forwardedDetailPath, forwardedFindQuery, forwardedQuery } from '../query/forwarded-query.js'
import { wagtailErrors } from '../query/wagtail-messages.js'
import { bytesOf, selectedDetail } from '../tree/detail-body.js'
import { scopeOfParams, scopeOfSelection, treeScope, type Scope } from '../tree/list-scope.js'
import { matchesSelection } from '../tree/select-pages.js'
import type { PageRecord, Snapshot } from '../tree/snapshot.js'
import { ABSENT_FIND_KEYS, absentDetailKeys, detailKeys, findKeys } from '../tree/answer-keys.js'
import { errorAnswer, type HttpAnswer } from './answers.js'
import type { ForwardingView } from './forward-plans.js'
import type { IndexAnswers } from './index-answers.js'
import type { ListBodies } from './list-bodies.js'

export type ViewPlan = ListPlan | DetailPlan | FindPlan

/** One view's own steps; `pages-service.ts` runs them in the order they share. */
export interface View<P extends ViewPlan> {
  /** How its forwards are remembered, and how what the CMS answers is learnt from. */
  readonly name: ForwardingView
  plan(pathId: string, params: QueryParams, snapshot: Snapshot, accept: string | undefined): P
  /** The CMS-relative URL and the scope of a forward. */
  forward(pathId: string, params: QueryParams, snapshot: Snapshot): { relative: string; scope: Scope }
  index(plan: Extract<P, { kind: 'index' }>, snapshot: Snapshot): HttpAnswer
}

export interface PagesViewsOptions {
  /** What the CMS said does not exist, under a snapshot: the planners answer it here. */
  readonly knownAbsentOf: (snapshot: Snapshot) => KnownAbsent
  readonly indexAnswers: IndexAnswers
  readonly listBodies: ListBodies
  /** The public URL of the pages endpoint, ending in `/`: find's Location starts with it. */
  readonly pagesUrl: string
}

export function listView(options: PagesViewsOptions): View<ListPlan> {
  return {
    name: 'list',
    plan: (_pathId, params, snapshot, accept) => planListing(params, snapshot, accept, options.knownAbsentOf(snapshot)),
    forward: (_pathId, params, snapshot) => ({ relative: forwardedQuery(params), scope: scopeOfParams(snapshot, (key) => params.get(key)) }),
    index(plan, snapshot) {
      const scope = scopeOfSelection(snapshot, plan.query)
      const { body, keys } = options.listBodies.bodyOf(snapshot, plan.query, scope)
      return options.indexAnswers.answer(body, () => keys)
    },
  }
}

export function detailView(options: PagesViewsOptions): View<DetailPlan> {
  return {
    name: 'detail',
    plan: (pathId, params, snapshot, accept) => planDetail(pathId, params, snapshot, accept, options.knownAbsentOf(snapshot)),
    forward(pathId, params) {
      // A detail depends on its page (and its parent, which its bytes embed); tree filters on
      // a detail (`?child_of=`) make it depend on more.
      const treeFiltered = ['child_of', 'descendant_of', 'ancestor_of'].some((key) => params.get(key) !== undefined)
      const id = Number(BigInt(pathId))
      const scope: Scope = treeFiltered || !Number.isSafeInteger(id) ? treeScope : { kind: 'page', id }
      return { relative: `${forwardedDetailPath(pathId)}${forwardedQuery(params)}`, scope }
    },
    index(plan, snapshot) {
      const page = plan.id === undefined ? undefined : snapshot.byId.get(plan.id)
      // An id no page has: the page's creation purges its 404 (docs/cdn-purging.md#negative-answers).
      if (!page && plan.id !== undefined) return options.indexAnswers.absent(wagtailErrors.noMatch(plan.modelName), absentDetailKeys(plan.id))
      if (!page || !matchesSelection(snapshot, page, plan.selection)) return errorAnswer(wagtailErrors.noMatch(plan.modelName))
      const body = plan.members ? selectedDetail(page.detail, plan.members) : bytesOf(page.detail)
      return options.indexAnswers.answer(body, () => detailKeys(snapshot, page), page.id)
    },
  }
}

export function findView(options: PagesViewsOptions): View<FindPlan> {
  // A record is only kept by a snapshot whose chain above it is the same: its keys hold.
  const findKeysOf = [new WeakMap<PageRecord, readonly string[]>(), new WeakMap<PageRecord, readonly string[]>()] as const
  return {
    name: 'find',
    plan: (_pathId, params, snapshot, accept) => planFind(params, snapshot, accept, options.knownAbsentOf(snapshot)),
    forward: (_pathId, params) => ({ relative: `find/${forwardedFindQuery(params)}`, scope: treeScope }),
    index(plan, snapshot) {
      if (plan.id === undefined) return options.indexAnswers.absent(wagtailErrors.findNotFound, ABSENT_FIND_KEYS)
      const query = snapshot.dialect.findKeepsQuery ? `?${djangoUrlencode(plan.forwardQuery)}` : ''
      const page = snapshot.byId.get(plan.id)!
      const memo = findKeysOf[plan.typed ? 1 : 0]
      let keys = memo.get(page)
      if (keys === undefined) memo.set(page, (keys = findKeys(snapshot, page, plan.typed)))
      return options.indexAnswers.redirect(`${options.pagesUrl}${plan.id}/${query}`, keys)
    },
  }
}
