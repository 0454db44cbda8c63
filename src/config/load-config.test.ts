import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { isProxyError, type ProxyError } from '../errors.js'
import { renderExampleEnv } from './config-docs.js'
import { describeConfig, loadConfig } from './load-config.js'
import { parseValue } from './parse-value.js'
import { variables } from './schema.js'

const REQUIRED = { UPSTREAM_URL: 'https://cms.example.com', BASE_URL: 'https://api.example.com' }

function configError(env: Record<string, string | undefined>): ProxyError {
  try {
    loadConfig(env)
  } catch (error) {
    if (isProxyError(error, 'CONFIG_INVALID')) return error
    throw error
  }
  throw new Error('expected loadConfig to throw')
}

describe('loadConfig', () => {
  it('fills every default when only the required variables are set', () => {
    expect(loadConfig(REQUIRED)).toEqual({
      upstreamUrl: 'https://cms.example.com',
      baseUrl: 'https://api.example.com',
      apiPath: '/api/v1/cms/',
      pagesEndpoint: 'pages',
      apiEndpoints: [],
      sites: [],
      port: 8080,
      host: '0.0.0.0',
      logLevel: 'info',
      logPretty: false,
      shutdownTimeoutMs: 10_000,
      loadShedEventLoopDelayMs: 1000,
      syncIntervalMs: 60_000,
      syncConcurrency: 8,
      syncDeriveUrls: true,
      syncRetryMaxMs: 300_000,
      fullSyncIntervalMs: 3_600_000,
      syncBudget: 0.005,
      refreshDebounceMs: 100,
      purgeAllow: expect.objectContaining({ entries: ['127.0.0.1/32', '::1/128'] }),
      leaderLeaseMs: 10_000,
      cacheTagHeaders: ['surrogate-key'],
      cacheStatusHeader: true,
      requestIdOnHits: false,
      fastPath: true,
      privateApis: true,
      upstreamTimeoutMs: 10_000,
      upstreamConnections: 16,
      upstreamRetries: 2,
      upstreamMaxBodyBytes: 64 * 1024 * 1024,
      readThroughRate: 10,
      readThroughBurst: 20,
      readThroughConcurrency: 4,
      readThroughAdaptive: true,
      readThroughQueueTimeoutMs: 500,
      readThroughClientRate: 2,
      readThroughClientBurst: 10,
      trustProxy: expect.objectContaining({ entries: [] }),
      frontendClients: expect.objectContaining({ entries: [] }),
      cacheTtlMs: 30_000,
      cacheMaxBytes: 64 * 1024 * 1024,
      cacheNegativeTtlMs: 10_000,
      cacheStaleWhileRevalidateMs: 60_000,
      cacheStaleIfErrorMs: 86_400_000,
      cacheTtlJitterPercent: 10,
      renderCacheMaxBytes: 64 * 1024 * 1024,
      redisPrefix: 'cms-shield:',
      redisCommandTimeoutMs: 250,
      snapshotPatchesPerFull: 50,
      snapshotFullIntervalMs: 600_000,
      clientMaxAgeMs: 30_000,
      clientStaleWhileRevalidateMs: 60_000,
      clientStaleIfErrorMs: 86_400_000,
      cdnSoftPurge: false,
      fastlyApiUrl: 'https://api.fastly.com',
      cloudflareApiUrl: 'https://api.cloudflare.com/client/v4',
      cdnMaxAgeMs: 3_600_000,
      cdnPurgeWaitMs: 5_000,
    })
  })

  it('reads the CDN purge targets, and refuses half a Fastly or Cloudflare setting and a bad Varnish URL, at once', () => {
    const config = loadConfig({
      ...REQUIRED, CDN_PURGE_VARNISH: 'http://varnish-1:6081/, http://varnish-2:6081', CDN_SOFT_PURGE: 'true',
      FASTLY_SERVICE_ID: 'service', FASTLY_API_TOKEN: 'fastly-token', CDN_MAX_AGE: '2h',
    })
    expect(config.cdnPurgeVarnish).toEqual(['http://varnish-1:6081', 'http://varnish-2:6081'])
    expect(config).toMatchObject({ cdnSoftPurge: true, fastlyServiceId: 'service', fastlyApiToken: 'fastly-token', cdnMaxAgeMs: 7_200_000 })

    const error = configError({ ...REQUIRED, CDN_PURGE_VARNISH: 'http://varnish:6081,varnish:6081?x', FASTLY_API_TOKEN: 'fastly-secret-token', CLOUDFLARE_ZONE_ID: 'zone', CACHE_TAG_HEADERS: 'surrogate-key,cache-tag' })
    expect(error.details?.['problems']).toEqual([
      expect.stringContaining('CDN_PURGE_VARNISH: got "http://varnish:6081,varnish:6081?x", expected http(s) URLs'),
      'FASTLY_SERVICE_ID: is required with FASTLY_API_TOKEN (set both or neither)',
      'CLOUDFLARE_API_TOKEN: is required with CLOUDFLARE_ZONE_ID (set both or neither)',
    ])
    expect(error.message).not.toContain('fastly-secret-token')
  })

  it('refuses a purge target without the tag header it purges by: Surrogate-Key for Varnish and Fastly, Cache-Tag for Cloudflare', () => {
    const varnish = configError({ ...REQUIRED, CDN_PURGE_VARNISH: 'http://varnish:6081', CACHE_TAG_HEADERS: 'false' })
    expect(varnish.details?.['problems']).toEqual(['CACHE_TAG_HEADERS: must include surrogate-key with CDN_PURGE_VARNISH: its purges name the keys that header carries'])
    const cloudflare = configError({ ...REQUIRED, CLOUDFLARE_ZONE_ID: 'zone', CLOUDFLARE_API_TOKEN: 'token-of-the-zone', CACHE_TAG_HEADERS: 'surrogate-key' })
    expect(cloudflare.details?.['problems']).toEqual(['CACHE_TAG_HEADERS: must include cache-tag with CLOUDFLARE_ZONE_ID: its purges name the keys that header carries'])
    expect(loadConfig({ ...REQUIRED, CLOUDFLARE_ZONE_ID: 'zone', CLOUDFLARE_API_TOKEN: 'token-of-the-zone', CDN_PURGE_VARNISH: 'http://varnish:6081', CACHE_TAG_HEADERS: 'surrogate-key,cache-tag' }).cacheTagHeaders)
      .toEqual(['surrogate-key', 'cache-tag'])
  })

  it('reads where the API router is mounted and its endpoints, as written or with the slashes left off', () => {
    const config = loadConfig({ ...REQUIRED, API_PATH: 'api/v2', PAGES_ENDPOINT: 'content', API_ENDPOINTS: 'images, documents,my_docs' })
    expect(config).toMatchObject({ apiPath: '/api/v2/', pagesEndpoint: 'content', apiEndpoints: ['images', 'documents', 'my_docs'] })
    expect(loadConfig({ ...REQUIRED, API_PATH: '/api/v2/', API_ENDPOINTS: 'none' })).toMatchObject({ apiPath: '/api/v2/', apiEndpoints: [] })
  })

  it('refuses a FRONTEND_TOKEN shorter than 16 characters', () => {
    expect(configError({ ...REQUIRED, FRONTEND_TOKEN: 'short' }).details?.['problems']).toEqual(['FRONTEND_TOKEN: must be at least 16 characters long'])
  })

  it('reads SITES as lower-case hostnames, and refuses a port, a URL or a host named twice', () => {
    expect(loadConfig({ ...REQUIRED, SITES: 'Partner.Example.com, shop.example.com' }).sites).toEqual(['partner.example.com', 'shop.example.com'])
    expect(loadConfig({ ...REQUIRED, SITES: 'none' }).sites).toEqual([])
    expect(configError({ ...REQUIRED, SITES: 'partner.example.com:8080' }).details?.['problems']).toEqual([
      'SITES: got "partner.example.com:8080", expected hostnames without a port, such as partner.example.com, comma-separated, or none; "partner.example.com:8080" is not one',
    ])
    expect(configError({ ...REQUIRED, SITES: 'a.example,https://b.example' }).message).toContain('"https://b.example" is not one')
    expect(configError({ ...REQUIRED, SITES: 'a.example,A.example' }).message).toContain('SITES: got "a.example,A.example", names a host twice')
  })

  it('refuses a mount path with dot segments or escapes, bad endpoint names and the pages endpoint named twice, at once', () => {
    const error = configError({ ...REQUIRED, API_PATH: '/api/../v2/', PAGES_ENDPOINT: 'find', API_ENDPOINTS: 'images,images' })
    expect(error.details?.['problems']).toEqual([
      'API_PATH: got "/api/../v2/", expected a URL path of plain segments such as /api/v2/',
      'PAGES_ENDPOINT: got "find", expected a router name of letters, digits, _ and - (not find)',
      'API_ENDPOINTS: got "images,images", names an endpoint twice',
    ])
    expect(configError({ ...REQUIRED, API_PATH: '/a%20b/', API_ENDPOINTS: 'pages,im ages' }).details?.['problems']).toEqual([
      'API_PATH: got "/a%20b/", expected a URL path of plain segments such as /api/v2/',
      'API_ENDPOINTS: got "pages,im ages", expected router names of letters, digits, _ and - (not find), comma-separated, or none; "im ages" is not one',
    ])
    expect(configError({ ...REQUIRED, API_ENDPOINTS: 'images,pages' }).details?.['problems']).toEqual([
      'API_ENDPOINTS: names pages, the pages endpoint (PAGES_ENDPOINT): list only the router\'s other endpoints',
    ])
  })

  it('refuses a TRUST_PROXY that is not a list of CIDRs, and a read-through budget of 0, with the others, at once', () => {
    const error = configError({ TRUST_PROXY: '10.0.0.0/8,lb.internal', READ_THROUGH_RATE: '0', READ_THROUGH_CLIENT_BURST: 'lots' })
    expect(error.message).toContain('TRUST_PROXY: got "10.0.0.0/8,lb.internal", expected CIDRs')
    expect(error.message).toContain('READ_THROUGH_RATE: got "0"')
    expect(error.message).toContain('READ_THROUGH_CLIENT_BURST: got "lots"')
  })

  it('refuses bad PURGE_ALLOW entries and short tokens, with the others, at once', () => {
    const error = configError({ PURGE_ALLOW: '10.0.0.0/8,cms.internal', REFRESH_TOKEN: 'short', PURGE_TOKEN: 'tiny' })
    expect(error.message).toContain('PURGE_ALLOW: got "10.0.0.0/8,cms.internal", expected CIDRs')
    expect(error.message).toContain('REFRESH_TOKEN: must be at least 16 characters long')
    expect(error.message).toContain('PURGE_TOKEN: must be at least 16 characters long')
    expect(error.message).not.toContain('short')
    expect(error.message).not.toContain('tiny')
  })

  it('has a default for every optional variable that its own parser accepts', () => {
    for (const [, variable] of variables()) {
      expect(variable.required === true || variable.optional === true || variable.default !== undefined, variable.name).toBe(true)
      if (variable.default !== undefined) expect(parseValue(variable, variable.default).ok, variable.name).toBe(true)
    }
  })

  it('reports every problem at once, one per line', () => {
    const error = configError({
      BASE_URL: 'ftp://api.example.com',
      PORT: '80a',
      LOG_LEVEL: 'loud',
      SYNC_INTERVAL: '500ms',
      SYNC_CONCURRENCY: '0',
      UPSTREAM_MAX_BODY: 'lots',
    })
    expect(error.statusCode).toBe(500)
    expect(error.message.split('\n')).toEqual([
      'invalid configuration:',
      expect.stringMatching(/^UPSTREAM_URL: is required \(Base URL of the Wagtail CMS/),
      'BASE_URL: got "ftp://api.example.com", expected an http(s) URL without credentials, query or fragment',
      'PORT: got "80a", expected a whole number from 0 to 65535',
      'LOG_LEVEL: got "loud", expected one of fatal, error, warn, info, debug, trace, silent',
      'SYNC_INTERVAL: got "500ms", expected a duration such as 250ms, 30s, 5m or 1h30m, from 1s to 168h',
      'SYNC_CONCURRENCY: got "0", expected a whole number from 1 to 64',
      'UPSTREAM_MAX_BODY: got "lots", expected a size such as 512kb, 64mb or 1gb, from 1kb to 512mb',
    ])
    expect(error.details?.problems).toHaveLength(7)
  })

  it('treats an empty or blank value as unset', () => {
    const config = loadConfig({ ...REQUIRED, PORT: '', LOG_LEVEL: '  ' })
    expect(config.port).toBe(8080)
    expect(config.logLevel).toBe('info')
    expect(configError({ ...REQUIRED, UPSTREAM_URL: '' }).message).toMatch(/UPSTREAM_URL: is required/)
  })

  it('respects zero where zero is allowed', () => {
    const config = loadConfig({ ...REQUIRED, PORT: '0', UPSTREAM_RETRIES: '0', CACHE_TTL: '0' })
    expect(config.port).toBe(0)
    expect(config.upstreamRetries).toBe(0)
    expect(config.cacheTtlMs).toBe(0)
  })

  it('reads SYNC_BUDGET as a share of one CMS worker, 0 turning it off, and refuses more than one worker or no percent sign', () => {
    expect(loadConfig({ ...REQUIRED, SYNC_BUDGET: '0.5%' }).syncBudget).toBe(0.005)
    expect(loadConfig({ ...REQUIRED, SYNC_BUDGET: '0' }).syncBudget).toBe(0)
    for (const bad of ['120%', '5', '-1%', 'five%']) {
      expect(() => loadConfig({ ...REQUIRED, SYNC_BUDGET: bad })).toThrow(/SYNC_BUDGET: got .*, expected a percentage such as 5% or 0.5%, or 0, from 0% to 100%/)
    }
  })

  it('reads durations, sizes and enums the way operators write them', () => {
    const config = loadConfig({
      ...REQUIRED, SYNC_INTERVAL: '1h30m', UPSTREAM_TIMEOUT: '1.5s', CACHE_TTL: '45', UPSTREAM_MAX_BODY: '512kb', LOG_LEVEL: 'DEBUG',
    })
    expect(config.syncIntervalMs).toBe(5_400_000)
    expect(config.upstreamTimeoutMs).toBe(1_500)
    expect(config.cacheTtlMs).toBe(45_000)
    expect(config.upstreamMaxBodyBytes).toBe(524_288)
    expect(config.logLevel).toBe('debug')
  })

  it('reads CACHE_TAG_HEADERS as a list of header names, none, or the boolean it once was', () => {
    const tags = (value: string) => loadConfig({ ...REQUIRED, CACHE_TAG_HEADERS: value }).cacheTagHeaders
    expect(tags('cache-tag')).toEqual(['cache-tag'])
    expect(tags('Cache-Tag, surrogate-key')).toEqual(['surrogate-key', 'cache-tag'])
    expect(tags('none')).toEqual([])
    expect(tags('false')).toEqual([])
    expect(tags('true')).toEqual(['surrogate-key', 'cache-tag'])
    expect(configError({ ...REQUIRED, CACHE_TAG_HEADERS: 'surrogate-key,x-tags' }).message).toMatch(
      /^CACHE_TAG_HEADERS: got "surrogate-key,x-tags", expected surrogate-key, cache-tag \(comma-separated\), or none$/m,
    )
  })

  it('refuses an upstream timeout of 0, which undici would read as "none"', () => {
    expect(configError({ ...REQUIRED, UPSTREAM_TIMEOUT: '0' }).message).toMatch(/^UPSTREAM_TIMEOUT: got "0"/m)
  })

  it('strips trailing slashes from URLs and keeps a path prefix', () => {
    const config = loadConfig({ UPSTREAM_URL: 'http://cms.internal:8000/wagtail//', BASE_URL: 'https://API.example.com/' })
    expect(config.upstreamUrl).toBe('http://cms.internal:8000/wagtail')
    expect(config.baseUrl).toBe('https://api.example.com')
  })

  it.each(['https://api.example.com/?x=1', 'https://api.example.com/#top', 'https://api.example.com?', 'https://u:p@api.example.com', 'api.example.com', 'mailto:a@b.c'])(
    'rejects %j as a base URL',
    (url) => {
      expect(configError({ ...REQUIRED, BASE_URL: url }).message).toMatch(/^BASE_URL: got /m)
    },
  )

  it('returns a deeply frozen object', () => {
    const config = loadConfig(REQUIRED)
    expect(Object.isFrozen(config)).toBe(true)
    expect(() => {
      ;(config as { port: number }).port = 1
    }).toThrow(TypeError)
  })

  it('quotes bad values so control characters stay visible, and truncates long ones', () => {
    const message = configError({ ...REQUIRED, PORT: '80\n80', HOST: 'x', SYNC_CONCURRENCY: '9'.repeat(500) }).message
    expect(message).toContain('PORT: got "80\\n80"')
    expect(message).toMatch(/SYNC_CONCURRENCY: got "9{200}…"/)
  })

  it('holds PURGE_ALLOW and TRUST_PROXY parsed and frozen, and logs them as written', () => {
    const config = loadConfig({ ...REQUIRED, PURGE_ALLOW: '10.0.0.0/8, ::1', TRUST_PROXY: '192.168.0.0/16' })
    expect(config.purgeAllow.has('10.1.2.3')).toBe(true)
    expect(config.purgeAllow.has('::ffff:10.1.2.3')).toBe(true)
    expect(config.purgeAllow.has('127.0.0.1')).toBe(false)
    expect(config.trustProxy.has('192.168.4.5')).toBe(true)
    expect(Object.isFrozen(config.purgeAllow)).toBe(true)
    expect(Object.isFrozen(config.purgeAllow.entries)).toBe(true)
    expect(JSON.parse(JSON.stringify(describeConfig(config)))).toMatchObject({ purgeAllow: '10.0.0.0/8,::1/128', trustProxy: '192.168.0.0/16' })
    expect(JSON.parse(JSON.stringify(describeConfig(loadConfig(REQUIRED))))).toMatchObject({ trustProxy: 'none' })
  })
})

describe('describeConfig', () => {
  it('returns every key of the config for logging', () => {
    const config = loadConfig(REQUIRED)
    expect(describeConfig(config)).toEqual({ ...config })
  })

  it('keeps a password in REDIS_URL, and the tokens, out of the log line', () => {
    const config = loadConfig({
      ...REQUIRED, REDIS_URL: 'redis://user:s3cret@redis:6379/0', PURGE_TOKEN: 'purge-token-0123456789', REFRESH_TOKEN: 'refresh-token-0123456789',
      FASTLY_SERVICE_ID: 'service', FASTLY_API_TOKEN: 'fastly-token-0123', CLOUDFLARE_ZONE_ID: 'zone', CLOUDFLARE_API_TOKEN: 'cloudflare-token-0123', CACHE_TAG_HEADERS: 'surrogate-key,cache-tag',
    })
    const described = JSON.stringify(describeConfig(config))
    expect(described).toContain('redis://[redacted]@redis:6379/0')
    for (const secret of ['s3cret', 'purge-token-0123456789', 'refresh-token-0123456789', 'fastly-token-0123', 'cloudflare-token-0123']) {
      expect(described).not.toContain(secret)
    }
  })

  it('redacts the Redis password and refuses two ways to reach Redis at once', () => {
    const config = loadConfig({ ...REQUIRED, REDIS_URL: 'redis://127.0.0.1:6379', REDIS_PASSWORD: 'hunter2' })
    expect(config.redisPassword).toBe('hunter2')
    expect(describeConfig(config)['redisPassword']).toBe('[redacted]')
    expect(JSON.stringify(describeConfig(config))).not.toContain('hunter2')
    expect(() => loadConfig({ ...REQUIRED, REDIS_URL: 'redis://a', REDIS_CLUSTER_NODES: 'b:1' })).toThrow(/REDIS_URL, REDIS_CLUSTER_NODES: set only one of them/)
    expect(() => loadConfig({ ...REQUIRED, REDIS_SENTINELS: 'a:26379' })).toThrow(/REDIS_SENTINEL_NAME: is required with REDIS_SENTINELS/)
  })
})

describe('config/example.env', () => {
  it('is what the schema renders (run `npx tsx scripts/config-table.ts --example --write`)', () => {
    const onDisk = readFileSync(new URL('../../config/example.env', import.meta.url), 'utf8')
    expect(onDisk).toBe(renderExampleEnv())
  })
})
