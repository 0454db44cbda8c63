/**
 * Carries out the build `planBuild` chose: the candidate snapshot a sync would swap in. The build
 * runs in slices (`slices.ts`), so requests never wait for a whole tree.
 * @module
 */
import { buildSnapshotInSlices, patchSnapshotInSlices, type BuildOptions, type SyncedPage, type TwinLookup } from '../tree/build-snapshot.js'
import { pagesArray, type PageSequence } from '../tree/page-list.js'
import type { Pause } from '../tree/slices.js'
import type { Dialect, Snapshot } from '../tree/snapshot.js'
import type { BuildStep } from './plan-sync.js'

export interface BuildInput {
  /** The snapshot served now (the one `planBuild` was given); the candidate's version follows its own. */
  readonly previous: Snapshot | undefined
  /** Every page in listing order (for `build`): as listed, or the previous snapshot's own. */
  readonly pages: PageSequence<SyncedPage>
  readonly dialect: Dialect
  /** When the sync started: a full build records it as when every detail was last checked. */
  readonly startedAt: number
  readonly now: () => number
  readonly pause: Pause
  /** Records other Sites' trees hold, for pages they share (`BuildOptions.twinOf`). */
  readonly twinOf?: TwinLookup
}

export function buildCandidate(step: BuildStep, input: BuildInput): Promise<Snapshot> {
  const { previous } = input
  const options = (full: boolean): BuildOptions => ({
    version: (previous?.version ?? 0) + 1,
    syncedAt: input.now(),
    // An incremental build read only some details: the others were last checked when `previous` was.
    fullSyncedAt: full || previous === undefined ? input.startedAt : previous.fullSyncedAt,
    dialect: input.dialect,
  })
  switch (step.kind) {
    case 'keep':
      return Promise.resolve(step.snapshot)
    case 'patch': {
      // Pages refreshed where they stand: the Site keeps its pages, and so its translation groups.
      const { translations } = step.previous
      return patchSnapshotInSlices(step.previous, step.replaced, { ...options(false), ...(translations === undefined ? {} : { translations }) }, input.pause)
    }
    case 'build':
      return buildSnapshotInSlices(pagesArray(input.pages), { ...options(step.full), ...(input.twinOf ? { twinOf: input.twinOf } : {}) }, input.pause)
  }
}
