/**
 * `npm run demo`: a fake Wagtail CMS with the seed-shaped 89-page site, and cms-shield in front of
 * it, on this machine only. Prints URLs to try; Ctrl-C stops both.
 */
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config/load-config.js'
import { generateSite, startFakeWagtail } from '../test/fake-wagtail/index.js'

const port = Number(process.env.PORT ?? 8080)
const origin = await startFakeWagtail({ pages: generateSite(), latencyMs: 20, recordRequests: false })
const base = `http://127.0.0.1:${port}`
const config = loadConfig({ ...process.env, UPSTREAM_URL: origin.url, BASE_URL: process.env.BASE_URL ?? base, PORT: String(port), HOST: '127.0.0.1' })
const app = await buildApp(config, {
  logger: { level: config.logLevel, transport: { target: 'pino-pretty', options: { ignore: 'pid,hostname', translateTime: 'HH:MM:ss' } } },
})
await app.listen({ port: config.port, host: config.host })
const first = await app.shield.sync.syncNow()
if (!first.ok) throw first.error
const root = app.shield.sync.current!.rootId
const somePage = app.shield.sync.current!.pages.at(5)!.id

const line = (text = '') => process.stdout.write(`${text}\n`)
line()
line(`  fake Wagtail CMS  ${origin.url}  (89 pages, 20 ms per request)`)
line(`  cms-shield        ${base}`)
line()
line('  Try:')
for (const path of [
  `/api/v1/cms/pages/?child_of=${root}&show_in_menus=true&limit=250`,
  '/api/v1/cms/pages/',
  `/api/v1/cms/pages/${somePage}/`,
  '/api/v1/cms/pages/find/?html_path=/',
  '/api/v1/cms/pages/?search=versicherung',
  '/api/v1/cms/pages/?limit=abc',
  '/readyz',
]) line(`    curl -i '${base}${path}'`)
line(`    curl -i -X PURGE '${base}/api/v1/cms/pages/${somePage}/'   # as Wagtail's frontend cache sends it`)
line()
line(`  CMS requests so far: ${origin.hits.total} (the sync); reads from the tree cost none.`)
line('  Ctrl-C to stop.')
line()

const stop = async () => {
  await app.close()
  await origin.close()
  process.exit(0)
}
process.once('SIGINT', () => void stop())
process.once('SIGTERM', () => void stop())
