/**
 * The baselines cms-shield is measured against (`bench/baseline-fastify.ts`, `bench/baseline-node.ts`):
 * each a process of its own on the server's CPU when pinned, sending the body and headers it is
 * given in files, reloaded on SIGHUP.
 * @module
 */
import { join } from 'node:path'
import type { BaselineHeaderSet } from './canned-response.js'
import type { LoadTarget } from './load.js'
import { BenchChild } from './processes.js'

export interface Baseline extends LoadTarget {
  child: BenchChild
  /** Which of cms-shield's headers it sends, and the file it reads them from. */
  headerSet: BaselineHeaderSet
  headersFile: string
}

/**
 * The detail row's third baseline when the others send cms-shield's whole header set: bare node
 * with only the four headers any cache sends, so the run also shows what that header set costs.
 */
export const NODE_FOUR_HEADERS = 'node, 4 headers'

/** The CPU every baseline of a run gets, and the header set they send unless told otherwise (BENCH_BASELINE_HEADERS). */
export interface BaselineSettings {
  cpu: number | undefined
  headerSet: BaselineHeaderSet
}

export interface BaselineOptions {
  holdMs?: number
  name?: string
  headerSet?: BaselineHeaderSet
}

/** `holdMs` (node only): answer a burst together, that long after its first request (the cold-key ideal). */
export async function startBaseline(
  settings: BaselineSettings,
  kind: 'fastify' | 'node',
  bodyFile: string,
  headersFile: string,
  { holdMs = 0, name = kind, headerSet = settings.headerSet }: BaselineOptions = {},
): Promise<Baseline> {
  const child = new BenchChild(`baseline-${name.replace(/[^a-z0-9]+/g, '-')}`, ['--import', 'tsx', join('bench', `baseline-${kind}.ts`)], {
    env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS_FILE: headersFile, BENCH_HOLD_MS: String(holdMs) },
    ...(settings.cpu !== undefined ? { cpu: settings.cpu } : {}),
  })
  const match = await child.waitForLine(/ ready url=(\S+)/, 30_000)
  return { name, origin: match[1] as string, pid: child.pid, child, headerSet, headersFile }
}
