/**
 * The after-swap pipeline with each step faked: save, announce, the purge gate and the purge run
 * in that order, each after the one before settled; a failing step is logged and the rest follow.
 */
import { describe, expect, it } from 'vitest'
import type { SavedSnapshot } from '../persist/snapshot-persistence.js'
import type { Snapshot } from '../tree/snapshot.js'
import { createAfterSwap, OPEN_GATE, type AfterSwapSteps, type SyncedSwap } from './after-swap.js'

const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

function swap(fingerprint = 'fp-1', purgeKeys: readonly string[] = ['cms-page-3']): SyncedSwap {
  return { snapshot: { fingerprint } as Snapshot, purgeKeys, swappedAt: 42 }
}

/** Steps that record their calls; each waits for its `open` unless told to fail. */
function fakeSteps(fail: { save?: boolean; announce?: boolean; gate?: boolean } = {}) {
  const calls: string[] = []
  const warnings: string[] = []
  const held = new Map<string, () => void>()
  const hold = (step: string, fails: boolean | undefined) => new Promise<void>((resolve, reject) => {
    calls.push(step)
    held.set(step, fails ? () => reject(new Error(`${step} failed`)) : resolve)
  })
  const steps: AfterSwapSteps = {
    save: (snapshot) => hold(`save ${snapshot.fingerprint}`, fail.save).then(() => ({ fingerprint: snapshot.fingerprint }) as SavedSnapshot),
    announce: (snapshot, saved) => hold(`announce ${snapshot.fingerprint} saved ${saved?.fingerprint}`, fail.announce),
    gate: { beforePurge: (fingerprint) => hold(`gate ${fingerprint}`, fail.gate) },
    purge: {
      enqueue: (keys, at) => void calls.push(`purge ${keys.join(' ')} at ${at}`),
      idle: () => Promise.resolve(),
      close: () => Promise.resolve(),
    },
  }
  const logger = { warn: (_details: unknown, message: string) => void warnings.push(message) }
  /** Lets the step that waits go on, and the next one start. */
  const open = async (step: string) => {
    held.get(step)!()
    await settle()
  }
  return { steps, calls, warnings, open, logger }
}

describe('after a synced swap', () => {
  it('saves, announces what was saved, waits for the gate, then purges: each step after the one before', async () => {
    const { steps, calls, warnings, open, logger } = fakeSteps()
    const afterSwap = createAfterSwap(steps, logger)
    afterSwap.run(swap())
    let idle = false
    const idling = afterSwap.idle().then(() => { idle = true })
    expect(calls).toEqual(['save fp-1'])
    await open('save fp-1')
    expect(calls).toEqual(['save fp-1', 'announce fp-1 saved fp-1'])
    await open('announce fp-1 saved fp-1')
    expect(calls).toEqual(['save fp-1', 'announce fp-1 saved fp-1', 'gate fp-1'])
    expect(idle).toBe(false)
    await open('gate fp-1')
    await idling
    expect(calls).toEqual(['save fp-1', 'announce fp-1 saved fp-1', 'gate fp-1', 'purge cms-page-3 at 42'])
    expect(warnings).toEqual([])
  })

  it('still waits for the gate and purges when saving fails, with a warning, and announces nothing', async () => {
    const { steps, calls, warnings, open, logger } = fakeSteps({ save: true })
    const afterSwap = createAfterSwap(steps, logger)
    afterSwap.run(swap())
    await open('save fp-1')
    expect(warnings).toEqual(['snapshot: storing or announcing failed'])
    await open('gate fp-1')
    await afterSwap.idle()
    expect(calls).toEqual(['save fp-1', 'gate fp-1', 'purge cms-page-3 at 42'])
  })

  it.each([
    ['announcing', { announce: true }, 'snapshot: storing or announcing failed'],
    ['the gate', { gate: true }, 'cdn purge: the gate failed; purging anyway'],
  ] as const)('purges anyway, with a warning, when %s fails', async (_step, fail, warning) => {
    const { steps, calls, warnings, open, logger } = fakeSteps(fail)
    const afterSwap = createAfterSwap(steps, logger)
    afterSwap.run(swap())
    for (const step of ['save fp-1', 'announce fp-1 saved fp-1', 'gate fp-1']) await open(step)
    await afterSwap.idle()
    expect(calls).toEqual(['save fp-1', 'announce fp-1 saved fp-1', 'gate fp-1', 'purge cms-page-3 at 42'])
    expect(warnings).toEqual([warning])
  })

  it('saves and announces without a purge target or without keys, and asks no gate', async () => {
    const { steps, calls, open, logger } = fakeSteps()
    const withoutTarget = createAfterSwap({ ...steps, purge: undefined }, logger)
    expect(withoutTarget.delivery).toBeUndefined()
    withoutTarget.run(swap('fp-1'))
    await withoutTarget.idle()
    await open('save fp-1')
    await open('announce fp-1 saved fp-1')
    createAfterSwap(steps, logger).run(swap('fp-2', []))
    await open('save fp-2')
    await open('announce fp-2 saved fp-2')
    expect(calls).toEqual(['save fp-1', 'announce fp-1 saved fp-1', 'save fp-2', 'announce fp-2 saved fp-2'])
  })

  it('without persistence goes straight to the gate; once closed, purges nothing more', async () => {
    const { steps, calls, open, logger } = fakeSteps()
    const afterSwap = createAfterSwap({ ...steps, save: undefined }, logger)
    afterSwap.run(swap())
    await settle()
    expect(calls).toEqual(['gate fp-1'])
    await afterSwap.close()
    await open('gate fp-1')
    afterSwap.run(swap('fp-2'))
    await afterSwap.idle()
    expect(calls).toEqual(['gate fp-1'])
  })

  it('the open gate opens at once', async () => {
    await expect(OPEN_GATE.beforePurge('fp')).resolves.toBeUndefined()
  })
})
