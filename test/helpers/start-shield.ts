/**
 * Starts a fake Wagtail origin and a cms-shield app in front of it, for integration tests.
 */
import type { FastifyInstance } from 'fastify'
import { buildApp, type AppDependencies } from '../../src/app.js'
import { loadConfig } from '../../src/config/load-config.js'
import { generateSite, startFakeWagtail, type FakeWagtail, type FakeWagtailOptions } from '../fake-wagtail/index.js'

export const BASE_URL = 'https://shield.example'

/** A read-through budget too large to bind in any test that does not test it. */
export const UNLIMITED_READ_THROUGH: Readonly<Record<string, string>> = {
  READ_THROUGH_RATE: '100000',
  READ_THROUGH_BURST: '100000',
  READ_THROUGH_CONCURRENCY: '256',
  READ_THROUGH_CLIENT_RATE: '100000',
  READ_THROUGH_CLIENT_BURST: '100000',
  READ_THROUGH_QUEUE_TIMEOUT: '30s',
}

export interface Harness {
  readonly origin: FakeWagtail
  readonly app: FastifyInstance
  /** A GET through `inject`, returning status, headers and the body as text. */
  get(url: string, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: string }>
  /** The same request straight to the origin, for byte-for-byte comparisons. */
  origin_get(url: string, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: string }>
  close(): Promise<void>
}

export interface HarnessOptions {
  readonly origin?: Partial<FakeWagtailOptions>
  /** Put cms-shield in front of an origin that already runs (several instances, one CMS). */
  readonly sharedOrigin?: FakeWagtail
  readonly env?: Record<string, string>
  readonly deps?: AppDependencies
  /** Wait for the first sync (default true). */
  readonly synced?: boolean
}

export async function startShield(options: HarnessOptions = {}): Promise<Harness> {
  const origin = options.sharedOrigin ?? (await startFakeWagtail({ pages: generateSite(), ...options.origin }))
  const config = loadConfig({
    UPSTREAM_URL: origin.url,
    BASE_URL,
    LOG_LEVEL: 'silent',
    SYNC_INTERVAL: '1h',
    UPSTREAM_TIMEOUT: '2s',
    UPSTREAM_RETRIES: '0',
    // Tests of other behaviour send many distinct misses from one address: a budget that never
    // binds. The budget's own tests set these to the values they exercise.
    ...UNLIMITED_READ_THROUGH,
    ...options.env,
  })
  const app = await buildApp(config, { autoSync: false, logger: false, ...options.deps })
  await app.ready()
  if (options.synced ?? true) {
    for (const sync of [app.shield.sync, ...[...app.shield.sites.values()].map((site) => site.sync)]) {
      const result = await sync.syncNow()
      if (!result.ok) throw result.error
    }
  }
  return {
    origin,
    app,
    async get(url, headers = {}) {
      const response = await app.inject({ method: 'GET', url, headers })
      return { status: response.statusCode, headers: response.headers, body: response.body }
    },
    async origin_get(url, headers = {}) {
      const response = await fetch(origin.url + url, { headers, redirect: 'manual' })
      return { status: response.status, headers: response.headers, body: await response.text() }
    },
    async close() {
      await app.close()
      if (!options.sharedOrigin) await origin.close()
    },
  }
}

/** What the CMS's body becomes once its detail_urls point at cms-shield. */
export function asServedByShield(originBody: string, apiPath = '/api/v1/cms/'): string {
  return originBody.replaceAll(`http://localhost${apiPath}`, `${BASE_URL}${apiPath}`)
}
