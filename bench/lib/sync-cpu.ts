/**
 * What a sync costs cms-shield in CPU (`bench/sync-cpu.ts` and the `sync-cpu` scenario): a fresh
 * cms-shield against a site of `pages` on the fake CMS answering in 0 ms; spawn to `/readyz` 200,
 * the shield's CPU (utime + stime from /proc) from spawn to ready, the fake CMS's CPU over the same
 * time, RSS; then unchanged listing walks (`PURGE /nowhere/`), each one's CPU.
 * @module
 */
import { call, postJson, sleep } from './http.js'
import { setLatency, type Origin, type SiteInfo } from './origin-control.js'
import { processCpuSeconds, processMemory } from './processes.js'
import { afterOneSync, shieldIdle, type Shield } from './shield.js'

export interface SyncCpuResult {
  pages: number
  readyS: number
  /** Spawn to ready, startup included. */
  shieldCpuS: number
  originCpuS: number
  rssReadyBytes: number | undefined
  /** CPU of each unchanged listing walk, its /metrics polls included. */
  walkCpuS: number[]
  walkS: number[]
  rssAfterBytes: number | undefined
  peakRssBytes: number | undefined
}

const cpuOf = (pid: number): number => processCpuSeconds(pid) ?? Number.NaN

export const usPerPage = (seconds: number, pages: number): number => (seconds * 1e6) / pages

export function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
}

/** Serves a site of `pages` on `origin` at 0 ms, measures a shield `start` spawns through its first sync and `walks` walks, then stops it. */
export async function measureSyncCpu(origin: Origin, pages: number, walks: number, start: () => Promise<Shield>): Promise<SyncCpuResult> {
  const site = await postJson<SiteInfo>(`${origin.control}/site`, { pages }, 300_000)
  await setLatency(origin, 0)
  await sleep(500)
  const originBefore = cpuOf(origin.child.pid)
  const shield = await start()
  try {
    const shieldCpuS = cpuOf(shield.pid)
    const originCpuS = cpuOf(origin.child.pid) - originBefore
    const rssReadyBytes = processMemory(shield.pid)?.rss
    await shieldIdle(shield, 60_000)
    const walkCpuS: number[] = []
    const walkS: number[] = []
    for (let i = 0; i < walks; i += 1) {
      const before = cpuOf(shield.pid)
      const ms = await afterOneSync(shield, 120_000, async () => {
        const response = await call(`${shield.origin}/nowhere/`, { method: 'PURGE' })
        if (response.status !== 200) throw new Error(`PURGE /nowhere/: ${response.status}`)
      })
      walkCpuS.push(cpuOf(shield.pid) - before)
      walkS.push(ms / 1000)
      await shieldIdle(shield, 60_000)
    }
    const memory = processMemory(shield.pid)
    return { pages: site.pages, readyS: shield.readyAfterMs / 1000, shieldCpuS, originCpuS, rssReadyBytes, walkCpuS, walkS, rssAfterBytes: memory?.rss, peakRssBytes: memory?.peakRss }
  } finally {
    await shield.child.stop(30_000)
  }
}
