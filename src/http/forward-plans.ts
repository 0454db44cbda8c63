/**
 * Forwarded pages queries, worked out once per snapshot: what to ask the CMS, what its answer
 * depends on, its read-through key, and what the answer can teach about pages that do not exist.
 * The same URL under the same snapshot is always forwarded the same way, so repeated reads (hits
 * on a hot `search=`) skip parsing and planning. Also notes the digest each query was last
 * answered under, so a read-through entry a newer snapshot made unreachable is forgotten at once.
 * Kept apart from the views (which decide whether to forward) and from the read (which asks).
 * @module
 */
import type { CachedAnswer, ReadThroughOutcome } from '../cache/read-through.js'
import { createSupersededKeys } from '../cache/superseded-keys.js'
import { absentLesson } from '../query/absent-lessons.js'
import type { KnownAbsent } from '../query/known-absent.js'
import type { QueryParams } from '../query/query-params.js'
import { scopeDigest, type Scope } from '../tree/list-scope.js'
import { createSnapshotMemo } from '../tree/snapshot-memo.js'
import type { Snapshot } from '../tree/snapshot.js'

/** A query the CMS answers, as `ForwardPlans.plan` worked it out. */
export interface Forward {
  /** Path and query relative to the CMS's API router (`pages/?search=…`): what read-through asks for. */
  readonly relative: string
  /** The same relative to the pages endpoint (`?search=…`), as the log says it. */
  readonly viewPath: string
  /** The pages its answer depends on. */
  readonly scope: Scope
  readonly params: QueryParams
  /** False for answers never replayed (`order=random`). */
  readonly store: boolean
  /** `scopeDigest` of `scope` under the snapshot it was planned with. */
  readonly digest: string
  /** The read-through key: digest and query. */
  readonly key: string
  /** The memo key it is remembered under (`forwardKey`). */
  readonly memoKey: string
  /** Reads what the CMS's answer teaches about what does not exist (`absent-lessons.ts`). */
  readonly learn?: ((answer: CachedAnswer, outcome: ReadThroughOutcome) => void) | undefined
}

/** Which view a forward is planned for, as its memo key and the absent lessons name it. */
export type ForwardingView = 'list' | 'detail' | 'find'

export interface ForwardPlans {
  /** The forward planned under `snapshot` for `memoKey`, if one was. */
  planned(snapshot: Snapshot, memoKey: string): Forward | undefined
  /** Works out and remembers the forward of a query the view decided the CMS answers. */
  plan(snapshot: Snapshot, memoKey: string, view: ForwardingView, viewPath: string, scope: Scope, params: QueryParams): Forward
  /** Forgets a plan (one the budget refused: only forwards the CMS answered are worth keeping). */
  drop(memoKey: string): void
  /**
   * Notes that the CMS answered `forward` under its digest; returns the read-through key the
   * same query had under an older digest, now unreachable, if any.
   */
  answered(forward: Forward): string | undefined
}

export interface ForwardPlansOptions {
  /** The pages endpoint's name below the API router (PAGES_ENDPOINT). */
  readonly pagesEndpoint: string
  /** The other Site (SITES) whose tree this is: its forwards ask the CMS as it (`//<site>/…`, `wagtail-client.ts`). */
  readonly site?: string | undefined
  /** What the CMS said does not exist, under a snapshot; the plans' answers add to it. */
  readonly knownAbsentOf: (snapshot: Snapshot) => KnownAbsent
  /** Plans kept per snapshot; past it the least recently used are forgotten. */
  readonly maxPlans: number
}

/** Everything a view's plan depends on besides the snapshot. */
export function forwardKey(view: ForwardingView, pathId: string, request: { readonly rawQuery: string | undefined; readonly accept: string | undefined }): string {
  return `${view}\u0000${pathId}\u0000${request.rawQuery ?? '\u0001'}\u0000${request.accept ?? '\u0001'}`
}

const LESSON_VIEW = { list: 'listing', detail: 'detail', find: 'find' } as const

/**
 * What the CMS's answer to a forwarded query can teach about what does not exist, for later
 * queries under the same snapshot; `undefined` when it can teach nothing.
 * @param answeredHere called when this very query is now answered here, not from its forward.
 */
function learnerOf(view: ForwardingView, params: QueryParams, snapshot: Snapshot, known: KnownAbsent, answeredHere: () => void): Forward['learn'] {
  const lesson = absentLesson(LESSON_VIEW[view], params, snapshot, known)
  if (!lesson) return undefined
  return (answer, outcome) => {
    // A stale answer may be older than the snapshot: learn only from what the CMS says now.
    if (outcome === 'stale' || outcome === 'stale-error' || outcome === 'stale-budget') return
    if (lesson(answer.status, answer.body)) answeredHere()
  }
}

export function createForwardPlans(options: ForwardPlansOptions): ForwardPlans {
  const forwards = createSnapshotMemo<Forward>(options.maxPlans)
  const answeredDigests = createSupersededKeys()
  return {
    planned: (snapshot, memoKey) => forwards.get(snapshot, memoKey),
    plan(snapshot, memoKey, view, viewPath, scope, params) {
      const learn = learnerOf(view, params, snapshot, options.knownAbsentOf(snapshot), () => forwards.delete(memoKey))
      const relative = `${options.site === undefined ? '' : `//${options.site}/`}${options.pagesEndpoint}/${viewPath}`
      // `order=random` is a new order every time (docs/wagtail-compatibility.md#ordering): never replay it.
      const store = params.get('order') !== 'random'
      // Keyed by the digest of the pages the answer depends on (the whole tree for search or
      // find): a change there means a new key on every instance, a change elsewhere keeps it.
      const digest = scopeDigest(snapshot, scope)
      return forwards.set(memoKey, { relative, viewPath, scope, params, store, key: `${digest}:${relative}`, digest, memoKey, learn })
    },
    drop: (memoKey) => forwards.delete(memoKey),
    answered(forward) {
      // Noted once answered, as the plan is: a refused query stores nothing.
      const dead = forward.store ? answeredDigests.replace(forward.relative, forward.digest) : undefined
      return dead === undefined ? undefined : `${dead}:${forward.relative}`
    },
  }
}
