/**
 * The anchors of URL derivation (`derive-urls.ts`) for a tree the sync holds. A snapshot holds
 * every page's `html_url` as the CMS last wrote it (its listing item) and its parent (its detail's
 * `meta.parent`), so the anchors and their URLs are learned from the snapshot itself, once per
 * snapshot: a snapshot shared through Redis brings them along, and a full sync, which reads the
 * listing with `html_url`, learns them anew. An anchor's URL shows nothing of the tree (a Site's
 * root URL, a language prefix, a parent the listing does not show): the walks between two full
 * syncs take it as the last full read (or a walk that fell back to reading `html_url`) saw it
 * (docs/architecture.md#decisions, "Listing without html_url").
 * @module
 */
import { inSlices, runToEnd, runWithPauses, type Pause, type Steps } from '../tree/slices.js'
import type { PageRecord, Snapshot } from '../tree/snapshot.js'
import { AnchorLearner, childUrl } from './derive-urls.js'
import { htmlUrlOfItem } from './html-url-item.js'

const anchorsOfSnapshot = new WeakMap<Snapshot, ReadonlyMap<number, string | null> | null>()

/**
 * Per record, what learning found: its URL, and whether it follows from the parent's URL it saw.
 * A page carried over unchanged keeps its record (`build-snapshot.ts`), so learning the anchors
 * of each new snapshot reads only the items that changed.
 */
interface Learned {
  readonly url: string | null | undefined
  readonly parentUrl: string | null
  readonly follows: boolean
}
const learnedOfRecord = new WeakMap<PageRecord, Learned>()

/** Remembers, per record, whether its URL follows from its parent's (`Learned`). */
function followsRemembered(page: { readonly record: PageRecord; readonly slug: string; readonly htmlUrl: string | null }, parentUrl: string | null): boolean {
  const learned = learnedOfRecord.get(page.record)
  if (learned !== undefined && learned.parentUrl === parentUrl) return learned.follows
  const follows = childUrl(parentUrl, page.slug) === page.htmlUrl
  learnedOfRecord.set(page.record, { url: page.htmlUrl, parentUrl, follows })
  return follows
}

interface RecordPlace {
  readonly id: number
  readonly slug: string
  readonly parentId: number | null
  readonly htmlUrl: string | null | undefined
  readonly record: PageRecord
}

function* anchorSteps(snapshot: Snapshot): Steps<Map<number, string | null> | undefined> {
  const learner = new AnchorLearner<RecordPlace>(followsRemembered)
  let learning = true
  yield* inSlices(snapshot.pages.length, (from, to) => {
    for (let i = from; learning && i < to; i++) {
      const record = snapshot.pages.at(i)!
      const learned = learnedOfRecord.get(record)
      const htmlUrl = learned === undefined ? htmlUrlOfItem(record.listItem) : learned.url
      learning = learner.add({ id: record.id, slug: record.slug, parentId: record.parentId, htmlUrl, record })
    }
  })
  return learner.anchors
}

/**
 * The snapshot's anchors with the URLs it holds for them; `undefined`: its URLs do not derive
 * (`AnchorLearner`). Learned once per snapshot, in slices when `pause` is given (`slices.ts`).
 */
export async function anchorsOf(snapshot: Snapshot, pause?: Pause): Promise<ReadonlyMap<number, string | null> | undefined> {
  let anchors = anchorsOfSnapshot.get(snapshot)
  if (anchors === undefined) {
    const steps = anchorSteps(snapshot)
    anchors = (pause ? await runWithPauses(steps, pause) : runToEnd(steps)) ?? null
    anchorsOfSnapshot.set(snapshot, anchors)
  }
  return anchors ?? undefined
}
