/**
 * The real process: configuration errors stop it with every problem listed; a good configuration
 * serves, turns ready once synced, and exits 0 on SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { generateSite, startFakeWagtail, type FakeWagtail } from '../fake-wagtail/index.js'
import { freePort } from '../helpers/free-port.js'

const ENTRY = ['--import', 'tsx', 'src/main.ts']

function run(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ENTRY, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, output: () => output, exited }
}


let origin: FakeWagtail | undefined
let child: ChildProcess | undefined
afterEach(async () => {
  child?.kill('SIGKILL')
  child = undefined
  await origin?.close()
  origin = undefined
})

describe('cms-shield process', () => {
  it('refuses a bad configuration with every problem at once and exit code 2', async () => {
    const proc = run({ PORT: 'abc', SYNC_INTERVAL: 'soon', BASE_URL: 'ftp://x' })
    child = proc.child
    expect(await proc.exited).toBe(2)
    const output = proc.output()
    expect(output).toContain('UPSTREAM_URL')
    expect(output).toContain('PORT: got "abc"')
    expect(output).toContain('SYNC_INTERVAL: got "soon"')
    expect(output).toContain('BASE_URL: got "ftp://x"')
  })

  it('serves the CMS\'s tree once synced, and exits 0 on SIGTERM', async () => {
    origin = await startFakeWagtail({ pages: generateSite() })
    const port = await freePort()
    const proc = run({ UPSTREAM_URL: origin.url, BASE_URL: 'https://api.example.com', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' })
    child = proc.child
    const base = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 15_000
    let ready = false
    while (!ready && Date.now() < deadline) {
      ready = await fetch(`${base}/readyz`).then((r) => r.status === 200, () => false)
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(ready).toBe(true)
    const response = await fetch(`${base}/api/v1/cms/pages/?child_of=root&show_in_menus=true&limit=250`)
    expect(response.status).toBe(200)
    const body = (await response.json()) as { items: Array<{ meta: { detail_url: string } }> }
    expect(body.items[0]!.meta.detail_url).toMatch(/^https:\/\/api\.example\.com\/api\/v1\/cms\/pages\/\d+\/$/)

    // HEAD over a real socket: GET's headers and Content-Length, no body (docs/wagtail-compatibility.md#routes-and-methods).
    const detailPath = new URL(body.items[0]!.meta.detail_url).pathname
    const get = await fetch(`${base}${detailPath}`)
    const getBody = await get.arrayBuffer()
    const head = await fetch(`${base}${detailPath}`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-length')).toBe(String(getBody.byteLength))
    expect((await head.arrayBuffer()).byteLength).toBe(0)

    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
  })
})
