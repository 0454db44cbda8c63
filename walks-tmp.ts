import { generateSite } from './test/fake-wagtail/index.js'
import { startShield } from './test/helpers/start-shield.js'

const N = Number(process.env.PAGES ?? 20000)
for (const derive of ['false', 'true']) {
  const h = await startShield({ origin: { pages: generateSite({ pages: N }), limitMax: 250 }, env: { SYNC_DERIVE_URLS: derive } })
  const walk = async (label: string) => {
    h.origin.resetHits()
    const cpu = process.cpuUsage()
    const t = performance.now()
    const r = await h.app.shield.sync.syncNow()
    const ms = performance.now() - t
    const used = process.cpuUsage(cpu)
    const lists = h.origin.requests.filter((q) => q.kind === 'list').map((q) => decodeURIComponent(q.url))
    const withUrl = lists.filter((u) => !u.includes('-html_url'))
    console.log(JSON.stringify({ derive, label, ok: r.ok, lists: lists.length, listsWithUrl: withUrl.length, details: h.origin.requests.filter((q) => q.kind === 'detail').length, wallMs: Math.round(ms), cpuMs: Math.round((used.user + used.system) / 1000) }))
  }
  await new Promise((r) => setTimeout(r, 8000)); await walk('first walk after the full sync')
  await walk('nothing changed again')
  const snap = h.app.shield.sync.current!
  const leaf = snap.pages.slice().find((p) => p.parentId !== null && !snap.childrenOf.has(p.id))!
  h.origin.updatePage(leaf.id, { title: 'retitled' })
  await walk('leaf retitled')
  const parent = snap.pages.slice().find((p) => p.parentId !== null && (snap.childrenOf.get(p.id)?.length ?? 0) > 3)!
  h.origin.updatePage(parent.id, { slug: 'reslugged' })
  await walk('parent re-slugged')
  await h.close()
}
