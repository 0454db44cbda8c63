/**
 * One step of the rolling verification: the details of a few pages read again, one after
 * another, and compared byte for byte with the snapshot's. A page whose detail differs (a
 * body-only edit no PURGE announced) or that is gone is handed back: the caller refreshes it the
 * way a PURGE would (`refresh-queue.ts`, `refresh-in-place.ts`), so what is served stays exactly
 * the CMS's. What each read cost the CMS (its response time) is reported as it is spent.
 * @module
 */
import { rewriteDetailUrlsWithSpans, type RewriteUrl } from '../json/rewrite-detail-urls.js'
import { pageDigest } from '../tree/build-snapshot.js'
import type { Snapshot } from '../tree/snapshot.js'
import { badStatusError, isJson, type UpstreamGet } from './upstream-port.js'

export interface VerifyDeps {
  readonly get: UpstreamGet
  readonly pagesPath: string
  readonly rewriteUrl: RewriteUrl
  readonly now: () => number
  /** Called with each read's response time, ms, whether the read succeeded or not. */
  readonly spend: (ms: number) => void
}

export interface VerifiedStep {
  /** Pages read, the same or not. */
  readonly checked: number[]
  /** Pages whose detail is not the snapshot's any more: to refresh. */
  readonly differing: number[]
}

/** Reads the details of `ids` (pages `snapshot` holds); throws on an answer that says nothing about the page. */
export async function verifyDetails(deps: VerifyDeps, snapshot: Snapshot, ids: readonly number[], signal: AbortSignal): Promise<VerifiedStep> {
  const checked: number[] = []
  const differing: number[] = []
  for (const id of ids) {
    const record = snapshot.byId.get(id)
    if (record === undefined) continue
    const path = `${deps.pagesPath}${id}/`
    const started = deps.now()
    let answer
    try {
      answer = await deps.get(path, signal, 'sync')
    } finally {
      deps.spend(deps.now() - started)
    }
    checked.push(id)
    // Gone (deleted, unpublished): the refresh's one-item listing tells which.
    if (answer.status === 404) {
      differing.push(id)
      continue
    }
    if (answer.status !== 200 || !isJson(answer)) throw badStatusError(answer, `${path}: the CMS answered ${answer.status}`)
    const { text } = rewriteDetailUrlsWithSpans(answer.text, deps.rewriteUrl)
    // Compared by digest: a detail a stored snapshot keeps compressed is not made for this
    // (docs/performance.md, "Details decompressed on first read").
    if (pageDigest(record.listItem, record.typedListItem, text) !== record.digest) differing.push(id)
  }
  return { checked, differing }
}
