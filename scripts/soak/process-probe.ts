/**
 * One look at the cms-shield process: memory, descriptors and sockets from /proc (what the kernel
 * says, whatever the process thinks), and heap, active handles and resources by type, sync and
 * cache counters from its own `/metrics` (prom-client's default metrics are registered with the
 * `cms_shield_` prefix in src/observability/metrics.ts).
 *
 * Timers come from the census (shield-census.ts): `nodejs_active_resources{type="Timeout"}` counts
 * only the ref'd ones, and cms-shield's long-lived timers are unref'd.
 *
 * Sockets are told apart by their TCP endpoints (/proc/<pid>/net/tcp*, matched by inode): readers'
 * connections to cms-shield's port must all go once the readers hang up, while connections to the
 * CMS are a keep-alive pool (UPSTREAM_CONNECTIONS) that syncs every two seconds keep warm.
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { call, metricSum, parseMetrics } from '../../bench/lib/http.js'
import type { MetricSample } from '../../bench/lib/http.js'
import { processCpuSeconds, processMemory } from '../../bench/lib/processes.js'
import { readTimerCensus } from './shield-census.js'
import type { TimerCensus } from './shield-census.js'

export interface ProcessSample {
  rssBytes: number | null
  peakRssBytes: number | null
  cpuSeconds: number | null
  /** Entries of /proc/<pid>/fd. */
  fds: number | null
  /** Of those, sockets (`socket:[inode]`): listeners, clients' connections and CMS connections. */
  sockets: number | null
  /** Sockets by what they are: `listen`, `client` (to cms-shield's port), `cms` (to the CMS), `other`. */
  socketKinds: Record<string, number> | null
  heapUsedBytes: number
  heapTotalBytes: number
  externalBytes: number
  activeHandles: Record<string, number>
  activeHandlesTotal: number
  activeResources: Record<string, number>
  activeResourcesTotal: number
  /** Event-loop delay p99 and max since the previous scrape (prom-client resets it on each). */
  loopLagP99Ms: number
  loopLagMaxMs: number
  syncRuns: number
  syncFailures: number
  /** Of those, syncs that met an edit in progress (SYNC_INCONSISTENT): refused by design, then retried. */
  syncRaced: number
  snapshotVersion: number
  snapshotPages: number
  cmsRequests: number
  /** Bytes held by each cache tier (`cache_bytes{tier,…}`), summed. */
  cacheBytes: number
  cacheEntries: number
  /** The timer census's last count (written every second); null without one. */
  timers: TimerCensus | null
}

function byType(samples: readonly MetricSample[], name: string): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const sample of samples) {
    if (sample.name === name) counts[sample.labels.type ?? '?'] = sample.value
  }
  return counts
}

export interface ProbeTarget {
  /** cms-shield's `http://127.0.0.1:<port>` */
  readonly url: string
  readonly pid: number
  /** The CMS's port, to tell its connections apart. */
  readonly cmsPort: number
  readonly censusFile?: string
}

const TCP_LISTEN = '0A'

/** inode → local port, remote port and state, from the process's view of /proc/net/tcp and tcp6. */
function tcpTable(pid: number): Map<string, { local: number; remote: number; state: string }> {
  const table = new Map<string, { local: number; remote: number; state: string }>()
  for (const name of ['tcp', 'tcp6']) {
    let text: string
    try {
      text = readFileSync(`/proc/${pid}/net/${name}`, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10) continue
      const port = (address: string | undefined): number => parseInt(address?.split(':').at(-1) ?? '', 16)
      table.set(fields[9] as string, { local: port(fields[1]), remote: port(fields[2]), state: fields[3] as string })
    }
  }
  return table
}

function descriptors(target: ProbeTarget): { fds: number; sockets: number; socketKinds: Record<string, number> } | undefined {
  const shieldPort = Number(new URL(target.url).port)
  try {
    const entries = readdirSync(`/proc/${target.pid}/fd`)
    const inodes: string[] = []
    for (const entry of entries) {
      try {
        const link = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${target.pid}/fd/${entry}`))
        if (link) inodes.push(link[1] as string)
      } catch {
        // closed between the listing and the look: not counted
      }
    }
    const table = tcpTable(target.pid)
    const socketKinds: Record<string, number> = { listen: 0, client: 0, cms: 0, other: 0 }
    for (const inode of inodes) {
      const tcp = table.get(inode)
      const kind = tcp === undefined ? 'other'
        : tcp.state === TCP_LISTEN ? 'listen'
          : tcp.local === shieldPort ? 'client'
            : tcp.remote === target.cmsPort ? 'cms' : 'other'
      socketKinds[kind] = (socketKinds[kind] ?? 0) + 1
    }
    return { fds: entries.length, sockets: inodes.length, socketKinds }
  } catch {
    return undefined
  }
}

export async function probeShield(target: ProbeTarget): Promise<ProcessSample> {
  const { pid, censusFile } = target
  const response = await call(`${target.url}/metrics`, { timeoutMs: 10_000 })
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`)
  const metrics = parseMetrics(response.body.toString('utf8'))
  // Read /proc right after /metrics, so the scrape's own socket is counted the same way every time.
  const memory = processMemory(pid)
  const fd = descriptors(target)
  const sum = (name: string, filter: Record<string, string> = {}): number => metricSum(metrics, name, filter)
  return {
    rssBytes: memory?.rss ?? null,
    peakRssBytes: memory?.peakRss ?? null,
    cpuSeconds: processCpuSeconds(pid) ?? null,
    fds: fd?.fds ?? null,
    sockets: fd?.sockets ?? null,
    socketKinds: fd?.socketKinds ?? null,
    heapUsedBytes: sum('cms_shield_nodejs_heap_size_used_bytes'),
    heapTotalBytes: sum('cms_shield_nodejs_heap_size_total_bytes'),
    externalBytes: sum('cms_shield_nodejs_external_memory_bytes'),
    activeHandles: byType(metrics, 'cms_shield_nodejs_active_handles'),
    activeHandlesTotal: sum('cms_shield_nodejs_active_handles_total'),
    activeResources: byType(metrics, 'cms_shield_nodejs_active_resources'),
    activeResourcesTotal: sum('cms_shield_nodejs_active_resources_total'),
    loopLagP99Ms: sum('cms_shield_nodejs_eventloop_lag_p99_seconds') * 1000,
    loopLagMaxMs: sum('cms_shield_nodejs_eventloop_lag_max_seconds') * 1000,
    syncRuns: sum('cms_shield_sync_runs_total'),
    syncFailures: sum('cms_shield_sync_runs_total', { result: 'failed' }),
    syncRaced: sum('cms_shield_sync_failures_total', { code: 'SYNC_INCONSISTENT' }),
    snapshotVersion: sum('cms_shield_snapshot_version'),
    snapshotPages: sum('cms_shield_snapshot_pages'),
    cmsRequests: sum('cms_shield_cms_requests_total'),
    cacheBytes: sum('cms_shield_cache_bytes'),
    cacheEntries: sum('cms_shield_cache_entries'),
    timers: censusFile === undefined ? null : (readTimerCensus(censusFile) ?? null),
  }
}
