/**
 * The CDN part's gate: keys of a swap are queued only once the purge gate opens for its
 * snapshot, a failing gate purges anyway, and `idle()` covers the wait.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startVarnishRecorder, type FakePurgeApi } from '../../test/helpers/fake-purge-apis.js'
import { loadConfig } from '../config/load-config.js'
import { createShieldEvents } from '../observability/shield-events.js'
import { realTimers } from '../timers.js'
import { composeCdn, type CdnParts, type PurgeGate } from './cdn.js'

let varnish: FakePurgeApi | undefined
let cdn: CdnParts | undefined
afterEach(async () => {
  await cdn?.close()
  await varnish?.close()
  cdn = varnish = undefined
})

const noop = () => undefined
const quiet = { info: noop, warn: noop, error: noop }

async function compose(gate?: PurgeGate, warnings: string[] = []) {
  varnish = await startVarnishRecorder()
  const config = loadConfig({ UPSTREAM_URL: 'https://cms.example', BASE_URL: 'https://api.example', CDN_PURGE_VARNISH: varnish.url })
  cdn = composeCdn({
    config, events: createShieldEvents(), clock: { now: Date.now, random: () => 0.5, timers: realTimers },
    logger: { ...quiet, warn: (_details, message) => void warnings.push(message) },
    ...(gate ? { gate: () => gate } : {}),
  })
  return { cdn, varnish }
}

describe('the CDN part', () => {
  it('purges at once without a gate (one instance)', async () => {
    const { cdn, varnish } = await compose()
    cdn.purgeAfterSwap(['cms-page-3'], 'fp-1', Date.now())
    await cdn.idle()
    expect(varnish.purgedKeys()).toEqual(['cms-page-3'])
  })

  it('queues a swap\'s keys only once it is stored and then the gate opens for its fingerprint, and idle() waits for both', async () => {
    const asked: string[] = []
    let open!: () => void
    const gate: PurgeGate = { beforePurge: (fingerprint) => (asked.push(fingerprint), new Promise<void>((resolve) => { open = resolve })) }
    const { cdn, varnish } = await compose(gate)
    let stored!: () => void
    cdn.purgeAfterSwap(['cms-page-3'], 'fp-2', Date.now(), new Promise<void>((resolve) => { stored = resolve }))
    let idle = false
    const idling = cdn.idle().then(() => { idle = true })
    await new Promise<void>((resolve) => setImmediate(resolve))
    // The gate is asked only once the snapshot is stored and announced.
    expect(asked).toEqual([])
    stored()
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(asked).toEqual(['fp-2'])
    expect(idle).toBe(false)
    expect(varnish.requests).toEqual([])
    open()
    await idling
    expect(varnish.purgedKeys()).toEqual(['cms-page-3'])
  })

  it('purges anyway, with a warning, when the gate fails', async () => {
    const warnings: string[] = []
    const { cdn, varnish } = await compose({ beforePurge: () => Promise.reject(new Error('redis down')) }, warnings)
    cdn.purgeAfterSwap(['cms-page-3'], 'fp-3', Date.now())
    await cdn.idle()
    expect(varnish.purgedKeys()).toEqual(['cms-page-3'])
    expect(warnings).toEqual(['cdn purge: the gate failed; purging anyway'])
  })

  it('has no delivery and does nothing without a purge target', async () => {
    const config = loadConfig({ UPSTREAM_URL: 'https://cms.example', BASE_URL: 'https://api.example' })
    const none = composeCdn({ config, events: createShieldEvents(), clock: { now: Date.now, random: Math.random, timers: realTimers }, logger: quiet })
    expect(none.delivery).toBeUndefined()
    none.purgeAfterSwap(['cms-page-3'], 'fp', Date.now())
    await none.idle()
    await none.close()
  })
})
