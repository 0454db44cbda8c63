/**
 * A CPU profile of cms-shield serving one URL under wrk: starts the fake CMS and a cms-shield with
 * `--cpu-prof`, runs wrk for `PROFILE_SECONDS` (10) against `PROFILE_PATH` (the first sampled
 * detail), stops cms-shield (which writes the profile on exit) and prints the functions with the
 * most self time. Pinned like the benchmark (wrk on CPU 0, cms-shield on the last CPU).
 *
 *   npm run build && npx tsx bench/profile-hit.ts [/api/v1/cms/pages/…] [extra header]
 *
 * `'If-None-Match: auto'` as the header sends the path's own ETag, which profiles its 304.
 * See docs/performance.md, "Where a hit's CPU goes".
 * @module
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { getJson } from './lib/http.js'
import { startOrigin, type SiteInfo } from './lib/origin-control.js'
import { cpuPinning, stopAllChildren } from './lib/processes.js'
import { startShield } from './lib/shield.js'
import { runWrk } from './lib/wrk.js'

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const seconds = Number(process.env['PROFILE_SECONDS'] ?? '10')
const pinning = cpuPinning('auto', cpus().length)
const dir = mkdtempSync(join(tmpdir(), 'cms-shield-profile-'))
const origin = await startOrigin(200, pinning)
try {
  const site = await getJson<SiteInfo>(`${origin.control}/info`)
  const settings = { workDir: dir, cpu: pinning?.server, shieldEnv: {}, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] }
  const shield = await startShield(settings, 'cms-shield', origin, 'warn', 60_000, {
    ...Object.fromEntries((process.env['PROFILE_SHIELD_ENV'] ?? '').split(/\s+/).filter(Boolean).map((pair) => pair.split('=', 2) as [string, string])),
  })
  const path = process.argv[2] || `/api/v1/cms/pages/${site.sampleIds[0]}/`
  const header = process.argv[3]?.split(': ', 2)
  if (header?.[0]?.toLowerCase() === 'if-none-match' && header[1] === 'auto') {
    const etag = (await fetch(`${shield.origin}${path}`)).headers.get('etag')
    if (etag === null) throw new Error(`${path} has no ETag`)
    header[1] = etag
  }
  const spec = { path, connections: 64, cpu: pinning?.harness, ...(header ? { headers: { [header[0] as string]: header[1] as string } } : {}) }
  await runWrk(shield, { ...spec, durationS: 3 })
  const sample = await runWrk(shield, { ...spec, durationS: seconds })
  process.stdout.write(`${path}: ${sample.requests} requests, ${sample.serverCpuUsPerRequest} µs/req, bad ${sample.bad}\n`)
  await shield.child.stop(10_000)
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
  if (!file) throw new Error(`no profile in ${dir}`)
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile
  const self = new Map<string, number>()
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame
    const key = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(node_modules|src|dist|lib)\//, '$1/')}:${frame.lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  const idle = self.get('(idle) :0') ?? 0
  process.stdout.write(`profile ${join(dir, file)}; busy ${((total - idle) / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms\n`)
  for (const [key, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env['PROFILE_TOP'] ?? '45'))) {
    process.stdout.write(`${((us / (total - idle)) * 100).toFixed(1).padStart(5)}%  ${key}\n`)
  }
} finally {
  await stopAllChildren()
}
