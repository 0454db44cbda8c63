/**
 * The Grafana dashboard (`config/grafana-dashboard.json`) only queries metrics cms-shield
 * exposes: this fails when a metric is renamed or dropped and the dashboard is not updated.
 */
import { readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { createStoreEvents } from '../src/observability/store-events.js'
import { createMetrics } from '../src/observability/metrics.js'
import { createShieldEvents } from '../src/observability/shield-events.js'

interface Target {
  readonly expr?: unknown
  readonly datasource?: { readonly uid?: unknown }
}

interface Panel {
  readonly id?: unknown
  readonly type?: unknown
  readonly title?: unknown
  readonly targets?: readonly Target[]
  readonly panels?: readonly Panel[]
}

interface Dashboard {
  readonly schemaVersion: number
  readonly panels: readonly Panel[]
  readonly __inputs?: ReadonlyArray<{ readonly name: string; readonly type: string; readonly pluginId: string }>
  readonly templating: { readonly list: ReadonlyArray<{ readonly name: string; readonly type: string }> }
}

const dashboard = JSON.parse(readFileSync(new URL('../config/grafana-dashboard.json', import.meta.url), 'utf8')) as Dashboard

/** Every panel, those inside collapsed rows included; rows themselves hold no queries. */
function queryPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((panel) => (panel.type === 'row' ? queryPanels(panel.panels ?? []) : [panel]))
}

const panels = queryPanels(dashboard.panels)
const exprs = panels.flatMap((panel) => (panel.targets ?? []).map((target) => String(target.expr)))

// Every source given, so every metric the app can expose is in the registry.
const metrics = createMetrics({
  events: createShieldEvents(),
  tiers: [
    { name: 'memory', events: createStoreEvents(), entries: () => 0, bytes: () => 0 },
    { name: 'redis', events: createStoreEvents() },
  ],
  snapshot: () => undefined,
  redis: { up: () => true },
  role: () => 'leader',
  budget: () => ({ scope: 'cluster', tokens: 20, concurrencyLimit: 4, inFlight: 0, queued: 0 }),
  net: () => undefined,
  now: () => 0,
})
afterAll(() => metrics.close())
// prom-client's types declare `type` as a numeric enum; at run time it is the exposition's type name.
const exposed = new Map(metrics.registry.getMetricsAsArray().map((metric) => [metric.name, String(metric.type)]))

describe('the Grafana dashboard', () => {
  it('is a dashboard of a recent schema, with a Prometheus data source input and job / instance variables', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36)
    expect(dashboard.__inputs).toContainEqual(expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }))
    const variables = dashboard.templating.list.map((variable) => `${variable.name}:${variable.type}`)
    expect(variables).toEqual(expect.arrayContaining(['DS_PROMETHEUS:datasource', 'job:query', 'instance:query']))
  })

  it('gives every panel a title and queries, each on the ${DS_PROMETHEUS} data source and filtered by job', () => {
    expect(panels.length).toBeGreaterThan(20)
    for (const panel of panels) {
      expect(typeof panel.title === 'string' && panel.title.length > 0, `panel ${String(panel.id)} has a title`).toBe(true)
      expect(panel.targets?.length ?? 0, `"${String(panel.title)}" has targets`).toBeGreaterThan(0)
      for (const target of panel.targets ?? []) {
        expect(typeof target.expr === 'string' && target.expr.length > 0, `"${String(panel.title)}" has an expr`).toBe(true)
        expect(target.datasource?.uid).toBe('${DS_PROMETHEUS}')
        expect(target.expr, `"${String(panel.title)}"`).toContain('job=~"$job"')
      }
    }
  })

  it('gives every panel its own id', () => {
    const ids = [...panels, ...dashboard.panels.filter((panel) => panel.type === 'row')].map((panel) => panel.id)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it('queries only metrics the registry exposes (histograms through _bucket, _sum and _count)', () => {
    const referenced = new Set(exprs.flatMap((expr) => expr.match(/cms_shield_[a-z0-9_]+/g) ?? []))
    expect(referenced.size).toBeGreaterThan(20)
    const unknown = [...referenced].filter((name) => {
      if (exposed.has(name)) return false
      const base = name.replace(/_(bucket|sum|count)$/, '')
      return base === name || exposed.get(base) !== 'histogram'
    })
    expect(unknown).toEqual([])
  })

  it('covers every cms-shield metric of its own (default process metrics aside)', () => {
    const text = exprs.join('\n')
    const own = [...exposed.keys()].filter((name) => !/^cms_shield_(process|nodejs)_/.test(name))
    expect(own.filter((name) => !new RegExp(`${name}(_bucket|_sum|_count)?\\b`).test(text))).toEqual([])
  })
})
