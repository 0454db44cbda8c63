/**
 * Which Node runs cms-shield: the README promises one lowest version, package.json's `engines`
 * and CI (.ci/run) hold to the same one and test its line as well as the production image's, and
 * every production dependency admits it — except those the README names as loaded only by the
 * tests' `app.inject()`, which a serving process is checked never to load.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
// fastify's own dependency, so present wherever cms-shield is installed.
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean
  minVersion(range: string): { version: string } | null
}

const packageJson = JSON.parse(read('package.json')) as { engines: { node: string } }
const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } }> }
/** The lowest Node the README promises, as x.y.z. */
const promised = (() => {
  const match = /Needs Node\.js (\d+)\.(\d+)\+/.exec(read('README.md'))
  if (!match) throw new Error('README.md names no "Needs Node.js X.Y+"')
  return `${match[1]}.${match[2]}.0`
})()

/** Production packages that declare a Node above the promised one; the README says where each is used. */
const ABOVE_PROMISED: string[] = []

describe('the Node cms-shield runs on', () => {
  it('is the same lowest version in the README, package.json engines and the CI script', () => {
    expect(semver.minVersion(packageJson.engines.node)?.version).toBe(promised)
    // .ci/run refuses to test on a Node outside `engines`, after installing.
    const ci = read('.ci/run')
    const check = ci.indexOf('is outside package.json engines')
    expect(check).toBeGreaterThan(ci.indexOf('npm ci'))
    expect(check).toBeLessThan(ci.indexOf('npm test'))
  })

  it('is a line that is not end-of-life, and CI tests it beside the image\'s own line', () => {
    // Node 22 is maintained until 2027-04-30; the image's line is the Dockerfile's NODE_VERSION.
    expect(Number(promised.split('.')[0])).toBeGreaterThanOrEqual(22)
    const image = /^ARG NODE_VERSION=(\d+)$/m.exec(read('Dockerfile'))?.[1]
    expect(Number(image)).toBeGreaterThan(Number(promised.split('.')[0]))
    const ci = read('.ci/run')
    // Both majors come from the files themselves, so CI cannot test another line than they name.
    expect(ci).toContain('ARG NODE_VERSION=')
    expect(ci).toContain('require("./package.json").engines.node')
    expect(ci).toMatch(/npm pack .*node-linux-/)
  })

  it('is admitted by every production dependency but those the README names as loaded by tests only', () => {
    const above = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && entry.dev !== true && entry.engines?.node !== undefined && !semver.satisfies(promised, entry.engines.node))
      .map(([path, entry]) => `${path.replace(/^.*node_modules\//, '')}@${entry.version} (node ${entry.engines?.node})`)
    expect(above.map((name) => name.replace(/@.*$/, ''))).toEqual(ABOVE_PROMISED)
    const dockerSection = read('README.md').split('\n## Docker')[1] ?? ''
    for (const name of ABOVE_PROMISED) expect(dockerSection, name).toContain(`\`${name}@`)
  })

  it('is enough for a serving process: it never loads those packages', async () => {
    // In a process of its own: this worker's module cache may hold what other tests loaded.
    const script = `
      import { createRequire } from 'node:module'
      const { buildApp } = await import(${JSON.stringify(join(ROOT, 'src/app.ts'))})
      const { loadConfig } = await import(${JSON.stringify(join(ROOT, 'src/config/load-config.ts'))})
      const app = await buildApp(loadConfig({ UPSTREAM_URL: 'http://127.0.0.1:9', BASE_URL: 'https://shield.example', LOG_LEVEL: 'silent' }), { autoSync: false })
      await app.listen({ port: 0, host: '127.0.0.1' })
      for (const path of ['/healthz', '/readyz', '/api/v1/cms/pages/', '/metrics']) await fetch('http://127.0.0.1:' + app.server.address().port + path)
      await app.close()
      const loaded = Object.keys(createRequire(import.meta.url)('node:module')._cache).map((file) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file)?.[1]).filter(Boolean)
      process.stdout.write(JSON.stringify([...new Set(loaded)]))
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    expect(await new Promise((resolve) => child.once('exit', resolve)), stderr).toBe(0)
    const loaded = JSON.parse(stdout) as string[]
    // The check sees what the server loads: fastify and its router at least.
    expect(loaded).toEqual(expect.arrayContaining(['fastify', 'find-my-way']))
    for (const name of ABOVE_PROMISED) expect(loaded, name).not.toContain(name)
  }, 30_000)
})
