import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { bytesOf } from '../tree/detail-body.js'
import { buildSnapshot, carryOver, patchSnapshot } from '../tree/build-snapshot.js'
import {
  applyMutations, arbitraryMutation, arbitraryScenario, arbitraryTree, DIALECT, snapshotOf, syncedPages,
} from '../tree/random-tree.test-helper.js'
import type { Snapshot } from '../tree/snapshot.js'
import { followPatches, loadChain } from './patch-chain.js'
import { tryDecodeSnapshot } from './snapshot-codec.js'
import { encodeSnapshotOfAsync } from './snapshot-encoder.js'
import { applyPatch, decodePatch, encodePatch, patchBetween, readPatchMetadata } from './snapshot-patch.js'
import { recordFields } from '../../test/helpers/snapshot-bytes.js'

const ORIGIN = { upstreamUrl: 'http://localhost', baseUrl: 'http://localhost' }

/** Everything a reader of a snapshot can see, as plain data. */
function readable(snapshot: Snapshot) {
  return {
    version: snapshot.version,
    syncedAt: snapshot.syncedAt,
    fullSyncedAt: snapshot.fullSyncedAt,
    fingerprint: snapshot.fingerprint,
    dialect: snapshot.dialect,
    rootId: snapshot.rootId,
    treeExact: snapshot.treeExact,
    byPath: [...snapshot.byPath].sort(),
    types: [...snapshot.types].sort(),
    pages: snapshot.pages.slice().map((page) => ({
      ...recordFields(page),
      detail: page.detail.toString('utf8'),
      byId: snapshot.byId.get(page.id) === page,
      children: (snapshot.childrenOf.get(page.id) ?? []).map((child) => child.id),
    })),
  }
}

/** What a follower holding `base` makes of the patch the leader stored on its way to `next`. */
function throughStorage(base: Snapshot, next: Snapshot): Snapshot {
  const patch = patchBetween(base, next, ORIGIN, 10_000)!
  const decoded = decodePatch(encodePatch(patch))
  if (!decoded.ok) throw new Error(decoded.reason)
  const applied = applyPatch(base, decoded.patch)
  if (!applied.ok) throw new Error(applied.reason)
  return applied.snapshot
}

describe('a snapshot stored as a patch against the one before', () => {
  it('rebuilds, from the base, the very snapshot the leader built, whatever the edits (moves, additions, removals, reorders, renames)', () => {
    fc.assert(
      fc.property(arbitraryScenario(30, 5), fc.integer({ min: 0, max: 1e12 }), (scenario, syncedAt) => {
        const previous = snapshotOf(scenario.tree, 1)
        const next = buildSnapshot(syncedPages(applyMutations(scenario.tree, scenario.mutations)), {
          version: 2, syncedAt, fullSyncedAt: syncedAt - 1, dialect: { ...DIALECT, limitMax: null },
        })
        const rebuilt = throughStorage(previous, next)
        expect(rebuilt.fingerprint).toBe(next.fingerprint)
        expect(readable(rebuilt)).toEqual(readable(next))
      }),
    )
  })

  it('replaces in place what the leader replaced in place, sharing every untouched record with the base', () => {
    const model = snapshotOf(fc.sample(arbitraryTree(40).filter((tree) => tree.pages.size >= 5), { seed: 7, numRuns: 1 })[0]!, 1)
    const edited = { ...carryOver(model.pages.at(3)!), title: 'Edited', detail: '{"edited": true}', digest: undefined, from: undefined }
    const next = patchSnapshot(model, new Map([[edited.id, edited]]), { version: 2, syncedAt: 5, dialect: DIALECT })
    const patch = patchBetween(model, next, ORIGIN, 10)!
    expect(patch.order).toBeUndefined()
    expect(patch.pages.map((page) => page.id)).toEqual([edited.id])
    const rebuilt = throughStorage(model, next)
    expect(readable(rebuilt)).toEqual(readable(next))
    expect(rebuilt.pages.at(0)).toBe(model.pages.at(0))
  })

  it('says the order in a few segments for an edit deep in a large tree, so an edit stores what it changed', () => {
    const pages = syncedPages(fc.sample(arbitraryTree(2), { seed: 1, numRuns: 1 })[0]!)
    const wide = [pages[0]!, ...Array.from({ length: 5_000 }, (_, i) => ({ ...pages[0]!, id: i + 10, parentId: pages[0]!.id, slug: `p${i}`, listItem: `{"id": ${i + 10}}`, detail: `{"id": ${i + 10}}` }))]
    const base = buildSnapshot(wide, { version: 1, syncedAt: 0, dialect: DIALECT })
    // A page added in the middle: two runs of the base and the new page.
    const added = { ...wide[1]!, id: 99_999, slug: 'new', listItem: '{"id": 99999}', detail: '{"id": 99999}' }
    const next = buildSnapshot([...wide.slice(0, 2500), added, ...wide.slice(2500)], { version: 2, syncedAt: 1, dialect: DIALECT })
    const patch = patchBetween(base, next, ORIGIN, 10)!
    expect(patch.order).toEqual([[0, 2500], 99_999, [2500, 5001]])
    expect(encodePatch(patch).length).toBeLessThan(1000)
    expect(readable(throughStorage(base, next))).toEqual(readable(next))
    // More changed pages than allowed: stored whole instead.
    expect(patchBetween(next, base, ORIGIN, 10)).toBeDefined()
    const retitled = buildSnapshot(wide.map((page) => ({ ...page, title: 'x' })), { version: 3, syncedAt: 2, dialect: DIALECT })
    expect(patchBetween(base, retitled, ORIGIN, 10)).toBeUndefined()
  })

  it('refuses a patch for another base, a corrupted one and one whose result is not the announced fingerprint', () => {
    const [tree] = fc.sample(arbitraryTree(20), { seed: 3, numRuns: 1 })
    const base = snapshotOf(tree!, 1)
    const next = snapshotOf(applyMutations(tree!, [{ kind: 'edit', target: 1, field: 'title', value: 2 }]), 2)
    const other = snapshotOf(applyMutations(tree!, [{ kind: 'delete', target: 1 }]), 2)
    const patch = patchBetween(base, next, ORIGIN, 100)!
    const buf = encodePatch(patch)
    expect(applyPatch(other, patch)).toMatchObject({ ok: false, reason: expect.stringContaining('applies to') as string })
    const corrupted = Buffer.from(buf)
    corrupted[corrupted.length - 3]! ^= 1
    expect(decodePatch(corrupted)).toMatchObject({ ok: false, reason: expect.stringContaining('checksum') as string })
    expect(readPatchMetadata(buf)).toMatchObject({ ok: true, metadata: { from: base.fingerprint, fingerprint: next.fingerprint, version: 2 } })
    expect(applyPatch(base, { ...patch, fingerprint: 'not-it' })).toMatchObject({ ok: false, reason: expect.stringContaining('not the patch') as string })
  })
})

describe('a full snapshot and the chain of patches after it', () => {
  const chainOf = (count: number) =>
    fc.record({ tree: arbitraryTree(25), rounds: fc.array(fc.array(arbitraryMutation, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: count }) })

  it('loads, at start, as the last snapshot of the chain; and a follower on any link follows the rest', async () => {
    await fc.assert(
      fc.asyncProperty(chainOf(5), async ({ tree, rounds }) => {
        const snapshots = [snapshotOf(tree, 1)]
        let model = tree
        for (const [index, mutations] of rounds.entries()) {
          model = applyMutations(model, mutations)
          snapshots.push(snapshotOf(model, index + 2))
        }
        const patches = snapshots.slice(1).map((next, index) => encodePatch(patchBetween(snapshots[index]!, next, ORIGIN, 10_000)!))
        const full = tryDecodeSnapshot(await encodeSnapshotOfAsync(snapshots[0]!, ORIGIN))
        if (!full.ok) throw new Error(full.reason)
        const loaded = loadChain(full.decoded, patches, ORIGIN.baseUrl)
        expect(loaded.patches).toBe(patches.length)
        if (!loaded.result.ok) throw new Error(loaded.result.reason)
        expect(readable(loaded.result.snapshot)).toEqual(readable(snapshots.at(-1)!))
        // A follower on link k reads the patches from k on.
        const k = rounds.length - 1
        const followed = followPatches(snapshots[k]!, patches.slice(k), ORIGIN.baseUrl)
        expect(followed.snapshot?.fingerprint).toBe(snapshots.at(-1)!.fingerprint)
      }),
      { numRuns: 40 },
    )
  })

  it('stops at a patch that does not chain from the one before (left over from an older full snapshot)', async () => {
    const [tree] = fc.sample(arbitraryTree(20).filter((model) => model.pages.size >= 5), { seed: 5, numRuns: 1 })
    const first = snapshotOf(tree!, 1)
    const second = snapshotOf(applyMutations(tree!, [{ kind: 'edit', target: 2, field: 'showInMenus', value: 1 }]), 2)
    const stray = snapshotOf(applyMutations(tree!, [{ kind: 'delete', target: 2 }]), 3)
    const patches = [encodePatch(patchBetween(first, second, ORIGIN, 100)!), encodePatch(patchBetween(first, stray, ORIGIN, 100)!)]
    const full = tryDecodeSnapshot(await encodeSnapshotOfAsync(first, ORIGIN))
    if (!full.ok) throw new Error(full.reason)
    const loaded = loadChain(full.decoded, patches, ORIGIN.baseUrl)
    expect(loaded.patches).toBe(1)
    expect(loaded.result.ok && loaded.result.snapshot.fingerprint).toBe(second.fingerprint)
    expect(followPatches(stray, patches, ORIGIN.baseUrl)).toMatchObject({ applied: 0 })
  })

  it('puts a patch made for another BASE_URL on this one, keeping the leader\'s fingerprint', async () => {
    const [tree] = fc.sample(arbitraryTree(20), { seed: 9, numRuns: 1 })
    const leaderOrigin = { upstreamUrl: ORIGIN.upstreamUrl, baseUrl: 'http://localhost' }
    // Pages whose detail_urls are the pages API's, as the leader rewrote them to its BASE_URL.
    const onApi = (model: typeof tree, version: number) => buildSnapshot(syncedPages(model!).map((page) => ({
      ...page,
      listItem: page.listItem.replaceAll('/api/v2/pages/', '/api/v1/cms/pages/'),
      detail: (page.detail as string).replaceAll('/api/v2/pages/', '/api/v1/cms/pages/'),
    })), { version, syncedAt: version, dialect: DIALECT })
    const first = onApi(tree, 1)
    const second = onApi(applyMutations(tree!, [{ kind: 'edit', target: 2, field: 'title', value: 1 }, { kind: 'move', target: 3, destination: 0, position: 0 }]), 2)
    const patch = encodePatch(patchBetween(first, second, leaderOrigin, 100)!)
    const full = tryDecodeSnapshot(await encodeSnapshotOfAsync(first, leaderOrigin))
    if (!full.ok) throw new Error(full.reason)
    const here = 'https://elsewhere.example'
    const { rebaseDecoded } = await import('./snapshot-codec.js')
    const loaded = loadChain(rebaseDecoded(full.decoded, here), [patch], here)
    if (!loaded.result.ok) throw new Error(loaded.result.reason)
    expect(loaded.patches).toBe(1)
    expect(loaded.result.snapshot.fingerprint).toBe(second.fingerprint)
    const detail = loaded.result.snapshot.pages.slice().map((page) => bytesOf(page.detail).toString()).find((text) => text.includes('detail_url'))!
    expect(detail).toContain('https://elsewhere.example/')
    // A follower already on the rebased base follows the same patch.
    const rebasedBase = loadChain(rebaseDecoded(full.decoded, here), [], here).result
    if (!rebasedBase.ok) throw new Error(rebasedBase.reason)
    expect(followPatches(rebasedBase.snapshot, [patch], here).snapshot?.fingerprint).toBe(second.fingerprint)
  })
})
