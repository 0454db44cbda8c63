/**
 * A deterministic, seed-shaped page tree (docs/wagtail-compatibility.md#the-seed-the-production-api-as-observed: an IndexPage root whose children are
 * LandingPages and RedirectPages; GenericPage, LeadGenerationSection, HealthInsuranceSection (with
 * HealthInsurancePages) and GenericFormPage below LandingPages). 89 pages by default, any size on request.
 *
 * Large strings come from small shared pools so 100,000 pages stay cheap in memory.
 * @module
 */
import type { FakePage } from './types.js'

export interface GenerateSiteOptions {
  /** Total number of pages including the root (default 89, as the seed's `total_count`). */
  pages?: number
  /** PRNG seed (default 1). Equal options give equal trees. */
  seed?: number
  /**
   * Django `TIME_ZONE` of the generated `first_published_at` values. The seed shows numeric UTC offsets,
   * so the default is `'Europe/Berlin'` (`…+01:00` / `…+02:00`); `'UTC'` gives Wagtail's `…Z` form.
   */
  timeZone?: 'Europe/Berlin' | 'UTC'
}

/** Every type the seed observed. */
export const SEED_PAGE_TYPES = [
  'cms.IndexPage',
  'cms.LandingPage',
  'cms.HealthInsuranceSection',
  'cms.HealthInsurancePage',
  'cms.GenericFormPage',
  'cms.GenericPage',
  'cms.LeadGenerationSection',
  'cms.RedirectPage',
] as const

export const GENERATED_ROOT_ID = 2

/** mulberry32: tiny, fast, good enough for fixtures. */
function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Random = () => number

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T
}

function uuid(random: Random): string {
  const hex = (n: number): string =>
    Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join('')
  return `${hex(8)}-${hex(4)}-4${hex(3)}-${pick(random, ['8', '9', 'a', 'b'])}${hex(3)}-${hex(12)}`
}

/** Last Sunday of a month, 01:00 UTC: when central European summer time starts/ends. */
function lastSundayUtc(year: number, month: number): number {
  const lastDay = new Date(Date.UTC(year, month + 1, 0))
  return Date.UTC(year, month, lastDay.getUTCDate() - lastDay.getUTCDay(), 1)
}

/** Offset of Europe/Berlin at an instant, in minutes (CET +60, CEST +120). */
function berlinOffsetMinutes(ms: number): number {
  const year = new Date(ms).getUTCFullYear()
  return ms >= lastSundayUtc(year, 2) && ms < lastSundayUtc(year, 9) ? 120 : 60
}

/**
 * DRF's `DateTimeField` output (docs/wagtail-compatibility.md#response-bodies): `isoformat()` in the current time zone, `+00:00` written as
 * `Z`, microseconds only when non-zero.
 */
export function formatWagtailTimestamp(ms: number, micros: number, timeZone: 'Europe/Berlin' | 'UTC'): string {
  const offset = timeZone === 'UTC' ? 0 : berlinOffsetMinutes(ms)
  const local = new Date(ms - (ms % 1000) + offset * 60_000).toISOString().slice(0, 19)
  const fraction = micros === 0 ? '' : `.${String(micros).padStart(6, '0')}`
  const zone = offset === 0 ? 'Z' : `+${String(offset / 60).padStart(2, '0')}:00`
  return `${local}${fraction}${zone}`
}

/** Timestamps between 2019 and 2025 with microseconds; a few land on a whole second (no fraction). */
function timestamp(random: Random, timeZone: 'Europe/Berlin' | 'UTC'): string {
  const start = Date.UTC(2019, 0, 1)
  const ms = start + Math.floor(random() * (Date.UTC(2025, 11, 31) - start))
  const micros = random() < 0.05 ? 0 : 1 + Math.floor(random() * 999_999)
  return formatWagtailTimestamp(ms, micros, timeZone)
}

const TOPICS = [
  'Dental Insurance', 'Travel Health Cover', 'Family Plans', 'Students', 'Self-Employed', 'Expats',
  'Hospital Cover', 'Vision Care', 'Long-Term Care', 'Preventive Check-ups', 'Physiotherapy', 'Maternity',
  'Zahnzusatzversicherung für Kinder', 'Krankenversicherung – Überblick', 'Assurance santé à l’étranger',
  'Pflegeversicherung & Vorsorge', 'Seguro dental – Preguntas', 'Beitragsrückerstattung', 'Café Benefits',
  'Heilpraktiker', 'Orthodontics', 'Naturopathy', 'Sports Injuries', 'Second Opinion',
]
const QUALIFIERS = ['Guide', 'Overview', 'FAQ', 'Compare Plans', 'Get a Quote', 'Tips', 'Costs', 'How It Works', 'Ratgeber', 'Tarife']

const PARAGRAPHS = [
  'Compare tariffs side by side and find the plan that fits your budget and your needs.',
  'Our advisers answer within one working day and help you with every claim.',
  'Waiting periods, annual limits and exclusions explained in plain language.',
  'Zahnersatz, Prophylaxe und Kieferorthopädie – alle Leistungen im Überblick.',
  'Prices include all fees; you can cancel monthly after the minimum term.',
  'Cover starts the day after we receive your application — no medical exam required.',
  'Les remboursements sont effectués sous 10 jours ouvrés.',
  'Ask for a free second opinion before any major treatment.',
]

/** Shared pools: pages reference these strings/arrays instead of holding their own copies. */
function buildPools(random: Random): { bodies: string[]; streams: unknown[][]; forms: unknown[][] } {
  const bodies = Array.from({ length: 48 }, (_, i) => {
    const paragraphs = Array.from({ length: 4 + (i % 4) }, () => `<p>${pick(random, PARAGRAPHS)}</p>`)
    paragraphs.splice(1, 0, `<h2>${pick(random, TOPICS)}</h2>`)
    paragraphs.push(`<p>See <a linktype="page" id="${GENERATED_ROOT_ID}">our home page</a> for more.</p>`)
    return paragraphs.join('')
  })
  const streams = Array.from({ length: 32 }, () => [
    { type: 'heading', value: pick(random, TOPICS), id: uuid(random) },
    { type: 'paragraph', value: `<p>${pick(random, PARAGRAPHS)}</p><p>${pick(random, PARAGRAPHS)}</p>`, id: uuid(random) },
    {
      type: 'teaser',
      value: { title: pick(random, QUALIFIERS), text: pick(random, PARAGRAPHS), link: { page: GENERATED_ROOT_ID, label: 'Learn more' } },
      id: uuid(random),
    },
    { type: 'cta', value: { label: 'Get a quote', url: '/quote/', style: 'primary' }, id: uuid(random) },
  ])
  const forms = Array.from({ length: 8 }, () => [
    { type: 'text', value: { label: 'Full name', required: true }, id: uuid(random) },
    { type: 'email', value: { label: 'Email', required: true }, id: uuid(random) },
    { type: 'choice', value: { label: 'Topic', choices: ['Dental', 'Travel', 'Hospital'] }, id: uuid(random) },
  ])
  return { bodies, streams, forms }
}

function slugify(title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/ß/g, 'ss')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return slug || 'page'
}

/** Ids start at 3 with occasional gaps (deleted pages), and are shuffled so children may have smaller ids. */
function idSequence(random: Random, count: number): number[] {
  const ids: number[] = []
  let next = GENERATED_ROOT_ID + 1
  while (ids.length < count) {
    ids.push(next)
    next += random() < 0.1 ? 2 + Math.floor(random() * 3) : 1
  }
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[ids[i], ids[j]] = [ids[j] as number, ids[i] as number]
  }
  return ids
}

type Pools = ReturnType<typeof buildPools>

function extraFor(type: string, random: Random, pools: Pools, id: number, title: string): Record<string, unknown> {
  const intro = `${title}: ${pick(random, PARAGRAPHS)}`
  switch (type) {
    case 'cms.IndexPage':
      return { intro, body: pick(random, pools.bodies), featured_pages: [] }
    case 'cms.LandingPage':
      return {
        intro,
        hero: { heading: title, image: { id: 100 + (id % 50), width: 1600, height: 900, alt: title } },
        body: pick(random, pools.streams),
      }
    case 'cms.RedirectPage':
      return { redirect_to: `https://partner.example.org/${slugify(title)}/`, open_in_new_tab: random() < 0.5 }
    case 'cms.LeadGenerationSection':
      return {
        intro,
        cta_label: pick(random, ['Get a quote', 'Call me back', 'Compare now']),
        // A large integer (a CRM campaign id) that must survive exactly, within the safe range.
        campaign_id: 9_007_199_254_000_000 + id,
        body: pick(random, pools.streams),
      }
    case 'cms.HealthInsuranceSection':
      return { intro, body: pick(random, pools.bodies), sort_order: Math.floor(random() * 100) }
    case 'cms.HealthInsurancePage':
      return {
        intro,
        tariff_code: `HI-${String(id).padStart(5, '0')}`,
        // Decimal prices such as 12.50 (JSON.stringify writes 12.5).
        price: Math.round(500 + random() * 9500) / 100,
        provider_id: 9_007_199_254_700_000 + id,
        body: pick(random, pools.streams),
      }
    case 'cms.GenericFormPage':
      return {
        intro,
        thank_you_text: '<p>Thank you! We will contact you shortly.</p>',
        to_address: 'leads@example.org',
        form_fields: pick(random, pools.forms),
      }
    default:
      return { body: pick(random, pools.bodies), sidebar: pick(random, pools.streams) }
  }
}

/** The types below a LandingPage, with weights (HealthInsuranceSection also brings children). */
const SECTION_TYPES: ReadonlyArray<readonly [string, number]> = [
  ['cms.GenericPage', 0.4],
  ['cms.LeadGenerationSection', 0.15],
  ['cms.HealthInsuranceSection', 0.2],
  ['cms.GenericFormPage', 0.25],
]

function sectionType(random: Random): string {
  let roll = random()
  for (const [type, weight] of SECTION_TYPES) {
    roll -= weight
    if (roll < 0) return type
  }
  return 'cms.GenericPage'
}

/**
 * Generates a deterministic site. The result is in stored (sibling) order: parents before their children,
 * children in menu order; ids are not ordered.
 */
export function generateSite(options: GenerateSiteOptions = {}): FakePage[] {
  const total = Math.max(1, Math.floor(options.pages ?? 89))
  const random = prng(options.seed ?? 1)
  const timeZone = options.timeZone ?? 'Europe/Berlin'
  const pools = buildPools(random)
  const ids = idSequence(random, total - 1)
  let nextId = 0
  const usedSlugs = new Map<number, Set<string>>()
  const pages: FakePage[] = []
  let titleCounter = 0

  const add = (type: string, parentId: number | null, overrides: Partial<FakePage> = {}): FakePage => {
    const id = parentId === null ? GENERATED_ROOT_ID : (ids[nextId++] as number)
    titleCounter++
    let title = overrides.title ?? `${pick(random, TOPICS)} ${pick(random, QUALIFIERS)}`
    // One title carries U+2028, which DRF escapes as \u2028 (docs/wagtail-compatibility.md#response-bodies).
    if (titleCounter === 7) title = `${title}\u2028Part 2`
    const siblings = usedSlugs.get(parentId ?? 0) ?? new Set<string>()
    usedSlugs.set(parentId ?? 0, siblings)
    let slug = overrides.slug ?? slugify(title)
    for (let n = 2; siblings.has(slug); n++) slug = `${slugify(title)}-${n}`
    siblings.add(slug)
    const page: FakePage = {
      id,
      type,
      title,
      slug,
      parentId,
      showInMenus: random() < 0.6,
      seoTitle: random() < 0.3 ? '' : `${title.replace('\u2028', ' ')} | Example Health`,
      searchDescription: random() < 0.4 ? '' : pick(random, PARAGRAPHS),
      firstPublishedAt: timestamp(random, timeZone),
      extra: extraFor(type, random, pools, id, title),
      ...overrides,
    }
    page.slug = slug
    page.title = title
    pages.push(page)
    return page
  }

  // The root was published before everything else.
  const rootPublished = formatWagtailTimestamp(Date.UTC(2018, 10, 5, 9, 12, 44), 512_301, timeZone)
  const root = add('cms.IndexPage', null, { title: 'Home', slug: 'home', showInMenus: false, firstPublishedAt: rootPublished })
  let remaining = total - 1
  if (remaining === 0) return pages

  // Top level: about √N pages, a quarter of them RedirectPages (some hidden from menus).
  const topLevel = Math.min(remaining, Math.max(1, Math.round(Math.sqrt(total))))
  const redirects = topLevel >= 3 ? Math.max(1, Math.round(topLevel / 4)) : 0
  const landings: FakePage[] = []
  const redirectSlots = new Set<number>()
  while (redirectSlots.size < redirects) redirectSlots.add(1 + Math.floor(random() * (topLevel - 1)))
  for (let slot = 0; slot < topLevel; slot++) {
    if (redirectSlots.has(slot)) {
      const page = add('cms.RedirectPage', root.id, { showInMenus: random() < 0.5 })
      page.detailHtmlUrl = `https://partner.example.org/${page.slug}/`
    } else {
      landings.push(add('cms.LandingPage', root.id, { showInMenus: random() < 0.85 }))
    }
  }
  remaining -= topLevel

  // Below each LandingPage: an even share of the rest, built depth-first so the array stays in sibling order.
  for (let i = 0; i < landings.length && remaining > 0; i++) {
    const landing = landings[i] as FakePage
    let quota = Math.floor(remaining / (landings.length - i))
    remaining -= quota
    while (quota > 0) {
      const type = sectionType(random)
      const section = add(type, landing.id)
      quota--
      if (type === 'cms.HealthInsuranceSection') {
        const children = Math.min(quota, 2 + Math.floor(random() * 5))
        for (let c = 0; c < children; c++) add('cms.HealthInsurancePage', section.id)
        quota -= children
      }
    }
  }
  return pages
}
