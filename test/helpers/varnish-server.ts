/**
 * A real Varnish for tests: `startVarnish()` runs `varnishd` in the foreground on a free port of
 * 127.0.0.1 with the shipped `config/varnish/default.vcl`, its backend block pointed at the test's
 * cms-shield, in a work directory of its own (so a system Varnish on 6081, if the package started
 * one, is never involved). Every instance is stopped when the process exits, whatever the tests did.
 *
 * `varnishMissing()` says why a suite cannot run here: a developer without Varnish sees the suite
 * skipped with that reason, CI (`CI=true`) gets the failure instead.
 */
import { spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { freePort } from './free-port.js'
import { startChildServer, stopChild } from './child-server.js'

export const SHIPPED_VCL = fileURLToPath(new URL('../../config/varnish/default.vcl', import.meta.url))

const STARTUP_DEADLINE_MS = 10_000

const missingBinary = () =>
  new Error('cannot start Varnish for the tests: no varnishd on PATH or in /usr/sbin; install it with `apt-get install -y varnish varnish-modules` (or set VARNISHD_BIN)')

export interface VarnishServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  /** The `-n` work directory; `varnishstat -n` reads it. */
  readonly workDir: string
  /**
   * Counters from `varnishstat -1 -j`, by name (`MAIN.cache_hit`, …). A worker adds its request to
   * them when it has sent the answer, so a client may read them a moment before that.
   */
  counters(): Record<string, number>
  /** SIGTERM, SIGKILL after 3 s, then removes the work directory. */
  stop(): Promise<void>
}

export interface VarnishOptions {
  /**
   * Where the backend blocks point: the cms-shield under test, or one instance per block (the
   * last one given serves the blocks left over).
   */
  readonly backend: { readonly host: string; readonly port: number } | ReadonlyArray<{ readonly host: string; readonly port: number }>
  /** Changes to the shipped VCL for a variant (applied after the backend rewrite). */
  readonly editVcl?: (vcl: string) => string
  /** Port to listen on, when cms-shield must know it first (CDN_PURGE_VARNISH); default: a free one. */
  readonly port?: number
}

/** The binary to run: `VARNISHD_BIN`, else `varnishd` on PATH or in /usr/sbin (not on a user's PATH). */
export function varnishdPath(): string | undefined {
  if (process.env.VARNISHD_BIN) return process.env.VARNISHD_BIN
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin']
  return dirs.map((dir) => join(dir, 'varnishd')).find((path) => path !== 'varnishd' && existsSync(path))
}

/**
 * Why Varnish suites cannot run on this machine, or undefined when they can. In CI a missing
 * Varnish is an error of the machine's setup (`.ci/run` installs it), never a reason to skip.
 */
export function varnishMissing(): string | undefined {
  if (varnishdPath() !== undefined || process.env.CI === 'true') return undefined
  return 'varnishd not found: install it (`apt-get install -y varnish varnish-modules`) or set VARNISHD_BIN to run the Varnish suites'
}

const HOST = /\.host\s*=\s*"([^"]*)"\s*;/
const PORT = /\.port\s*=\s*"([^"]*)"\s*;/

/**
 * The VCL's backend blocks, by name; throws when it has none, or one without a `.host` and a
 * `.port`, so a reshaped VCL fails loudly instead of testing something else.
 */
function backendBlocks(vcl: string): Array<{ name: string; block: string }> {
  const blocks = [...vcl.matchAll(/^\s*backend\s+(\w+)\s*\{[^}]*\}/gm)].map((match) => ({ name: match[1]!, block: match[0] }))
  if (blocks.length === 0) throw new Error('expected a backend block in the VCL, found none')
  for (const { name, block } of blocks) {
    if (!HOST.test(block) || !PORT.test(block)) throw new Error(`the VCL backend ${name} needs a .host and a .port`)
  }
  return blocks
}

/** Where each of the VCL's backend blocks points, in the order of the file. */
export function backendsOf(vcl: string): Array<{ name: string; host: string; port: number }> {
  return backendBlocks(vcl).map(({ name, block }) => ({ name, host: HOST.exec(block)![1]!, port: Number(PORT.exec(block)![1]) }))
}

/** The VCL with its backend blocks' `.host` and `.port` replaced (the last address serves the blocks left over), and nothing else. */
export function withBackends(vcl: string, backends: ReadonlyArray<{ readonly host: string; readonly port: number }>): string {
  let edited = vcl
  backendBlocks(vcl).forEach(({ block }, i) => {
    const { host, port } = backends[Math.min(i, backends.length - 1)]!
    edited = edited.replace(block, block.replace(HOST, `.host = "${host}";`).replace(PORT, `.port = "${port}";`))
  })
  return edited
}

export async function startVarnish(options: VarnishOptions): Promise<VarnishServer> {
  const binary = varnishdPath()
  if (binary === undefined) throw missingBinary()
  const dir = mkdtempSync(join(tmpdir(), 'cms-shield-varnish-'))
  // Started as root, varnishd drops to its own users, which must read the VCL in here.
  chmodSync(dir, 0o755)
  const vclPath = join(dir, 'default.vcl')
  const vcl = withBackends(readFileSync(SHIPPED_VCL, 'utf8'), 'host' in options.backend ? [options.backend] : options.backend)
  writeFileSync(vclPath, options.editVcl ? options.editVcl(vcl) : vcl)
  const workDir = join(dir, 'work')
  let lastError: unknown
  // The free port can be taken between finding it and Varnish binding it; try another then.
  for (let attempt = 1; attempt <= (options.port === undefined ? 3 : 1); attempt++) {
    const port = options.port ?? (await freePort())
    try {
      const child = await launch(binary, { vclPath, workDir, port })
      return server(child, port, dir, workDir)
    } catch (error) {
      lastError = error
      if (!/address already in use/i.test(String(error))) break
    }
  }
  rmSync(dir, { recursive: true, force: true })
  throw lastError
}

async function launch(binary: string, at: { vclPath: string; workDir: string; port: number }): Promise<ChildProcess> {
  const args = [
    '-F', // foreground: the manager is our child, and its cache process exits with it
    '-n', at.workDir,
    '-f', at.vclPath,
    '-a', `127.0.0.1:${at.port}`,
    '-T', 'none', // no management port: nothing to collide with, varnishstat reads the work directory
    '-s', 'malloc,64m',
    '-p', 'auto_restart=off', // a crashed cache process fails the test instead of starting empty
    '-p', 'thread_pools=1',
    '-p', 'thread_pool_min=10',
    // A worker serving a kept-alive connection adds to the counters after every request, not
    // every tenth: tests read them right after their requests.
    '-p', 'thread_stats_rate=1',
    '-p', 'feature=+busy_stats_rate',
  ]
  return startChildServer({
    binary,
    args,
    name: `varnishd on port ${at.port}`,
    ready: () => answers(at.port),
    deadlineMs: STARTUP_DEADLINE_MS,
    missing: missingBinary,
  })
}

/** Any HTTP answer from the port: a PURGE without keys, which the shipped VCL answers itself. */
async function answers(port: number): Promise<boolean> {
  try {
    const response = await request(`http://127.0.0.1:${port}/`, { method: 'PURGE', headersTimeout: 500 })
    await response.body.dump()
    return true
  } catch {
    return false
  }
}

function server(child: ChildProcess, port: number, dir: string, workDir: string): VarnishServer {
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    workDir,
    counters() {
      const result = spawnSync('varnishstat', ['-n', workDir, '-1', '-j'], { encoding: 'utf8' })
      if (result.status !== 0) throw new Error(`varnishstat failed: ${result.stderr || String(result.error)}`)
      const parsed = JSON.parse(result.stdout) as { counters?: Record<string, { value: number }> }
      // Varnish 6.5+ nests the counters; older versions put them at the top level.
      const counters = parsed.counters ?? (parsed as Record<string, { value: number }>)
      return Object.fromEntries(Object.entries(counters).filter(([, c]) => typeof c?.value === 'number').map(([name, c]) => [name, c.value]))
    },
    async stop() {
      await stopChild(child, 'SIGTERM')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

