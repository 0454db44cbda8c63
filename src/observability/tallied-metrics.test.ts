import { Histogram } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { checkTalliedMetrics, TalliedCounter, TalliedHistogram, TALLIED_METRICS_SUPPORTED } from './tallied-metrics.js'

describe('tallied request metrics', () => {
  it('pass their self-check with the prom-client installed, so metrics are read from the tally', async () => {
    // A prom-client release that stops asking getForPromString() fails here, rather than falling back unseen.
    expect(TALLIED_METRICS_SUPPORTED).toBe(true)
    await expect(checkTalliedMetrics()).resolves.toBe(true)
  })

  it('fail their self-check when the registry renders the histogram from prom-client\'s own state', async () => {
    // As if the registry called another method than getForPromString(): prom-client's own, which knows no tally.
    class Untallied extends TalliedHistogram {
      override getForPromString() {
        return (Histogram.prototype as unknown as TalliedHistogram).getForPromString.call(this)
      }
    }
    await expect(checkTalliedMetrics({ counter: TalliedCounter, histogram: Untallied })).resolves.toBe(false)
  })

  it('fail their self-check when rendering throws', async () => {
    class Throwing extends TalliedCounter {
      override get(): never {
        throw new TypeError('another shape')
      }
    }
    await expect(checkTalliedMetrics({ counter: Throwing, histogram: TalliedHistogram })).resolves.toBe(false)
  })
})
