/**
 * The fake Wagtail (`bench/origin.ts`) as the scenarios drive it: started as a process of its
 * own (on the harness's CPU when pinned), then told through its control API to count hits, delay
 * its answers or serve a new site.
 * @module
 */
import { join } from 'node:path'
import { getJson, postJson } from './http.js'
import type { SiteStructure } from './frontend-mix.js'
import { BenchChild } from './processes.js'
import type { CpuPinning } from './processes.js'

export interface Origin {
  child: BenchChild
  api: string
  control: string
}

/** `locales`: more than one starts it with WAGTAIL_I18N_ENABLED, the site translated into each after the first. */
export async function startOrigin(pages: number, pinning: CpuPinning | undefined, locales: readonly string[] = []): Promise<Origin> {
  const child = new BenchChild('origin', ['--import', 'tsx', join('bench', 'origin.ts')], {
    env: { BENCH_ORIGIN_PAGES: String(pages), BENCH_ORIGIN_LATENCY_MS: '0', ...(locales.length > 0 ? { BENCH_ORIGIN_LOCALES: locales.join(',') } : {}) },
    ...(pinning ? { cpu: pinning.harness } : {}),
  })
  const match = await child.waitForLine(/^bench-origin ready api=(\S+) control=(\S+)/, 60_000)
  return { child, api: match[1] as string, control: match[2] as string }
}

export interface Hits {
  total: number
  list: number
  detail: number
  find: number
  other: number
}

export const originHits = (origin: Origin): Promise<Hits> => getJson<Hits>(`${origin.control}/hits`)
export const resetHits = (origin: Origin): Promise<Hits> => postJson<Hits>(`${origin.control}/hits/reset`, {})
export const setLatency = (origin: Origin, ms: number): Promise<unknown> => postJson(`${origin.control}/latency`, { ms })

export interface SiteInfo {
  pages: number
  rootId: number
  sampleIds: number[]
  generatedMs?: number
}

/** Every live page, for queries derived from the site (`GET /structure`). */
export const originStructure = (origin: Origin): Promise<SiteStructure> => getJson<SiteStructure>(`${origin.control}/structure`)
