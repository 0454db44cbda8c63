/**
 * Looks at cms-shield every few seconds and folds the looks of one window into one row. One look
 * per window would mostly measure where the GC happened to be: heap in use saws between tens of
 * MiB as syncs build snapshots and the collector frees them. So the window keeps the heap's floor
 * (its lowest look, close to what survives a collection: that is what grows in a leak), and the
 * median of RSS, descriptors, sockets, handles and resources (a request in flight at the moment of
 * one look does not count), and the worst event-loop lag.
 * @module
 */
import { median } from './soak-report.js'
import { probeShield } from './process-probe.js'
import type { ProbeTarget, ProcessSample } from './process-probe.js'

export interface WindowProcess {
  looks: number
  /** The last look, as is (counters, snapshot version, handles by type). */
  last: ProcessSample
  rssBytes: number | null
  heapFloorBytes: number
  heapPeakBytes: number
  /** Median memory of Buffers and other objects outside the V8 heap (cms-shield keeps bodies as Buffers). */
  externalBytes: number
  fds: number | null
  sockets: number | null
  /** Median connections of readers to cms-shield, and to the CMS. */
  clientSockets: number | null
  cmsSockets: number | null
  activeHandlesTotal: number
  activeResourcesTotal: number
  /** Live timers by the census (median of the looks); null without a census. */
  timers: number | null
  /** Ref'd Timeout resources by prom-client (median of the looks). */
  refedTimeouts: number
  loopLagP99Ms: number
  loopLagMaxMs: number
  /** Looks that failed (timeout, non-200), with the first error. */
  failedLooks: number
  firstError: string | null
}

const medianOrNull = (values: ReadonlyArray<number | null>): number | null => {
  const known = values.filter((value): value is number => value !== null)
  return known.length === 0 ? null : median(known)
}

export class ProbeWindow {
  private looks: ProcessSample[] = []
  private failed = 0
  private firstError: string | null = null
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = false

  constructor(
    private readonly target: ProbeTarget,
    private readonly everyMs: number,
  ) {}

  /** Looks every `everyMs`, one at a time (a slow look delays the next, never overlaps it). */
  start(): void {
    this.schedule()
  }

  private schedule(): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.running = this.lookOnce().finally(() => {
        this.running = undefined
        this.schedule()
      })
    }, this.everyMs)
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.running
  }

  private async lookOnce(): Promise<void> {
    try {
      this.looks.push(await probeShield(this.target))
    } catch (error) {
      this.failed++
      this.firstError ??= error instanceof Error ? error.message : String(error)
    }
  }

  /** One more look now, then the window's summary; the next window starts empty. */
  async take(): Promise<WindowProcess> {
    clearTimeout(this.timer)
    // The look in progress schedules the next one when it ends; clear that too, then restart below.
    await this.running
    clearTimeout(this.timer)
    await this.lookOnce()
    this.schedule()
    const looks = this.looks
    const last = looks.at(-1)
    if (!last) throw new Error(`cms-shield's /metrics could not be read during the whole window: ${this.firstError ?? 'no look'}`)
    const summary: WindowProcess = {
      looks: looks.length,
      last,
      rssBytes: medianOrNull(looks.map((look) => look.rssBytes)),
      heapFloorBytes: Math.min(...looks.map((look) => look.heapUsedBytes)),
      heapPeakBytes: Math.max(...looks.map((look) => look.heapUsedBytes)),
      externalBytes: median(looks.map((look) => look.externalBytes)),
      fds: medianOrNull(looks.map((look) => look.fds)),
      sockets: medianOrNull(looks.map((look) => look.sockets)),
      clientSockets: medianOrNull(looks.map((look) => look.socketKinds?.client ?? null)),
      cmsSockets: medianOrNull(looks.map((look) => look.socketKinds?.cms ?? null)),
      activeHandlesTotal: median(looks.map((look) => look.activeHandlesTotal)),
      activeResourcesTotal: median(looks.map((look) => look.activeResourcesTotal)),
      timers: medianOrNull(looks.map((look) => look.timers?.live ?? null)),
      refedTimeouts: median(looks.map((look) => look.activeResources.Timeout ?? 0)),
      loopLagP99Ms: Math.max(...looks.map((look) => look.loopLagP99Ms)),
      loopLagMaxMs: Math.max(...looks.map((look) => look.loopLagMaxMs)),
      failedLooks: this.failed,
      firstError: this.firstError,
    }
    this.looks = []
    this.failed = 0
    this.firstError = null
    return summary
  }
}
