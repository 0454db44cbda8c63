/**
 * The one table of every environment variable cms-shield reads: name, kind, default, limits and
 * a doc line. `load-config.ts` parses from it, `scripts/config-table.ts` renders the table of docs/configuration.md
 * and `config/example.env` from it, so the three can never disagree.
 *
 * Defaults are written as an operator would write them (`60s`, `64mb`) and go through the same
 * parser as the environment, so a default can never be something the environment could not say.
 * @module
 */
import type { AddressList } from './cidr.js'

/** The two spellings of a response's purge keys a CDN reads (`tree/surrogate-keys.ts`). */
export const CACHE_TAG_HEADER_NAMES = ['surrogate-key', 'cache-tag'] as const
export type CacheTagHeader = (typeof CACHE_TAG_HEADER_NAMES)[number]

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** The validated, frozen configuration. Durations are in milliseconds, sizes in bytes. */
export interface Config {
  readonly upstreamUrl: string
  readonly baseUrl: string
  /** Where the CMS mounts its API router, and where cms-shield serves it: `/…/`. */
  readonly apiPath: string
  /** The pages endpoint's name in that router. */
  readonly pagesEndpoint: string
  /** The router's other endpoints, answered read-through (`images`, `documents`, …). */
  readonly apiEndpoints: readonly string[]
  /** Hostnames of the CMS's other Sites, lower-case: a request whose Host names one is that Site's. */
  readonly sites: readonly string[]
  readonly port: number
  readonly host: string
  readonly logLevel: LogLevel
  readonly logPretty: boolean
  readonly shutdownTimeoutMs: number
  readonly loadShedEventLoopDelayMs: number
  readonly loadShedHeapUsedBytes: number | undefined
  readonly syncIntervalMs: number
  readonly syncConcurrency: number
  readonly syncDeriveUrls: boolean
  readonly syncRetryMaxMs: number
  readonly fullSyncIntervalMs: number
  /** The share of one CMS worker the sync's safety net may use (0: off, the net unpaced). */
  readonly syncBudget: number
  readonly refreshDebounceMs: number
  readonly purgeAllow: AddressList
  readonly purgeToken: string | undefined
  readonly refreshToken: string | undefined
  readonly leaderLeaseMs: number
  readonly cacheTagHeaders: readonly CacheTagHeader[]
  readonly cacheStatusHeader: boolean
  readonly requestIdOnHits: boolean
  readonly fastPath: boolean
  readonly privateApis: boolean
  readonly upstreamTimeoutMs: number
  readonly upstreamConnections: number
  readonly upstreamRetries: number
  readonly upstreamMaxBodyBytes: number
  readonly readThroughRate: number
  readonly readThroughBurst: number
  readonly readThroughConcurrency: number
  readonly readThroughAdaptive: boolean
  readonly readThroughQueueTimeoutMs: number
  readonly readThroughClientRate: number
  readonly readThroughClientBurst: number
  readonly trustProxy: AddressList
  /** The site's own servers (SSR, static builds), by address: no per-client share, still the CMS budget. */
  readonly frontendClients: AddressList
  /** The same, by an `X-Frontend-Token` header. */
  readonly frontendToken: string | undefined
  readonly cacheTtlMs: number
  readonly cacheMaxBytes: number
  readonly cacheNegativeTtlMs: number
  readonly cacheStaleWhileRevalidateMs: number
  readonly cacheStaleIfErrorMs: number
  readonly cacheTtlJitterPercent: number
  readonly renderCacheMaxBytes: number
  /** Redis, shared by every instance; all unset = no Redis (everything in this process). */
  readonly redisUrl: string | undefined
  readonly redisSentinels: string | undefined
  readonly redisSentinelName: string | undefined
  readonly redisClusterNodes: string | undefined
  readonly redisPassword: string | undefined
  readonly redisPrefix: string
  readonly redisCommandTimeoutMs: number
  readonly snapshotFile: string | undefined
  /** Patches stored after a full snapshot before the next full one (0: every change stored whole). */
  readonly snapshotPatchesPerFull: number
  /** A full snapshot is stored again at the first change this long after the last one. */
  readonly snapshotFullIntervalMs: number
  readonly clientMaxAgeMs: number
  readonly clientStaleWhileRevalidateMs: number
  readonly clientStaleIfErrorMs: number
  /** Varnish base URLs purged by surrogate key; unset = none. */
  readonly cdnPurgeVarnish: readonly string[] | undefined
  readonly cdnSoftPurge: boolean
  readonly fastlyServiceId: string | undefined
  readonly fastlyApiToken: string | undefined
  readonly fastlyApiUrl: string
  readonly cloudflareZoneId: string | undefined
  readonly cloudflareApiToken: string | undefined
  readonly cloudflareApiUrl: string
  readonly cdnMaxAgeMs: number
  readonly cdnPurgeWaitMs: number
}

/** Required (with an example for docs), defaulted, or optional (unset turns a feature off). */
type Presence =
  | { readonly required: true; readonly example: string; readonly default?: never; readonly optional?: never }
  | { readonly default: string; readonly required?: never; readonly example?: never; readonly optional?: never }
  | { readonly optional: true; readonly example: string; readonly required?: never; readonly default?: never }

type Common = Presence & {
  /** The environment variable's name. */
  readonly name: string
  /** One line for docs/configuration.md and example.env: what it is for, not how it is parsed. */
  readonly doc: string
  /** Never logged, never echoed in error messages. */
  readonly secret?: true
}

/** `min`/`max` are in the parsed unit: milliseconds for durations, bytes for sizes. */
export type NumberVariable = Common & { readonly kind: 'int' | 'bytes' | 'duration'; readonly min?: number; readonly max?: number }
/**
 * `url`: http(s) only, no credentials, query or fragment; trailing slashes stripped.
 * `path`: an absolute URL path of plain segments that starts and ends with `/` (`/api/v2/`).
 * `name`: one name as Django's router registers it (letters, digits, `_`, `-`).
 */
export type TextVariable = Common & { readonly kind: 'url' | 'string' | 'path' | 'name' }
/** `names`: comma-separated `name`s, or none; `hosts`: comma-separated DNS hostnames (no port), or none. */
export type NameListVariable = Common & { readonly kind: 'names' | 'hosts' }
export type EnumVariable = Common & { readonly kind: 'enum'; readonly values: readonly string[] }
export type BoolVariable = Common & { readonly kind: 'bool' }
/** `cidrs`: an address list (`cidr.ts`), parsed here once so nothing downstream parses it again. */
export type AddressListVariable = Common & { readonly kind: 'cidrs' }
/** `urls`: comma-separated `url`s, each checked as one. */
export type UrlListVariable = Common & { readonly kind: 'urls' }
/**
 * `set`: some of `values`, comma-separated, in any order (kept in the order of `values`), or
 * `none`; `true` stands for all of them and `false` for none (what a boolean variable once said).
 */
export type SetVariable = Common & { readonly kind: 'set'; readonly values: readonly string[] }
/** `percent`: `5%`, `0.5%` or `0`; parsed to a fraction (`0.05`), `min`/`max` being fractions too. */
export type PercentVariable = Common & { readonly kind: 'percent'; readonly min?: number; readonly max?: number }
export type Variable = NumberVariable | PercentVariable | TextVariable | EnumVariable | BoolVariable | AddressListVariable | UrlListVariable | SetVariable | NameListVariable

// `[T] extends [...]` keeps the union LogLevel from distributing into one case per member.
type VariableFor<T> = [Exclude<T, undefined>] extends [number] ? NumberVariable | PercentVariable
  : [Exclude<T, undefined>] extends [boolean] ? BoolVariable
    : [Exclude<T, undefined>] extends [string] ? TextVariable | EnumVariable
      : [Exclude<T, undefined>] extends [readonly string[]] ? UrlListVariable | SetVariable | NameListVariable
      : [Exclude<T, undefined>] extends [AddressList] ? AddressListVariable
        : never

const SECOND = 1_000
const MIB = 1024 ** 2

/**
 * Every variable, keyed by its `Config` property; the table's order is the docs' order.
 * `satisfies` makes a missing or mistyped entry a compile error.
 */
export const schema = {
  upstreamUrl: {
    name: 'UPSTREAM_URL', kind: 'url', required: true, example: 'https://cms.example.com',
    doc: 'Base URL of the Wagtail CMS, path prefix included; its API is `<UPSTREAM_URL><API_PATH>`.',
  },
  baseUrl: {
    name: 'BASE_URL', kind: 'url', required: true, example: 'https://api.example.com',
    doc: "cms-shield's public base URL; every `detail_url` is built from it, never from the request's Host.",
  },
  apiPath: {
    name: 'API_PATH', kind: 'path', default: '/api/v1/cms/',
    doc: "Where the CMS's urls.py mounts its API router (Wagtail documents `/api/v2/`); cms-shield serves the API at the same path.",
  },
  pagesEndpoint: {
    name: 'PAGES_ENDPOINT', kind: 'name', default: 'pages',
    doc: 'The name the router registers `PagesAPIViewSet` under; answered from the synced page tree.',
  },
  apiEndpoints: {
    name: 'API_ENDPOINTS', kind: 'names', default: 'none',
    doc: "The router's other endpoints (`images,documents`, your own): answered read-through, with every protection read-through has.",
  },
  sites: {
    name: 'SITES', kind: 'hosts', default: 'none',
    doc: "Hostnames of the CMS's other Sites: a request whose Host names one is answered as that Site does (read-through); any other Host gets the default Site, from the snapshot.",
  },
  port: { name: 'PORT', kind: 'int', default: '8080', min: 0, max: 65_535, doc: 'TCP port to listen on (0 picks a free one).' },
  host: { name: 'HOST', kind: 'string', default: '0.0.0.0', doc: 'Address to listen on.' },
  logLevel: { name: 'LOG_LEVEL', kind: 'enum', default: 'info', values: LOG_LEVELS, doc: 'Least severe log level written.' },
  logPretty: {
    name: 'LOG_PRETTY', kind: 'bool', default: 'false',
    doc: 'Human-readable colored logs (pino-pretty, a development dependency) instead of one JSON object per line.',
  },
  shutdownTimeoutMs: {
    name: 'SHUTDOWN_TIMEOUT', kind: 'duration', default: '10s', min: 100, max: 10 * 60 * SECOND,
    doc: 'On SIGTERM, how long requests in flight may take to finish (the sync stops, the lease is released, Redis closes) before the process exits anyway.',
  },
  loadShedEventLoopDelayMs: {
    name: 'LOAD_SHED_EVENT_LOOP_DELAY', kind: 'duration', default: '1s', min: 0,
    doc: 'Answer 503 with Retry-After while the event loop lags more than this (0: never).',
  },
  loadShedHeapUsedBytes: {
    name: 'LOAD_SHED_HEAP_USED', kind: 'bytes', optional: true, example: '1gb', min: 1024 * 1024,
    doc: "Answer 503 with Retry-After while the V8 heap in use is above this. Unset: 90% of V8's heap limit.",
  },
  syncIntervalMs: {
    name: 'SYNC_INTERVAL', kind: 'duration', default: '60s', min: SECOND,
    doc: 'Time between two syncs of the page tree from the CMS.',
  },
  syncConcurrency: {
    name: 'SYNC_CONCURRENCY', kind: 'int', default: '8', min: 1, max: 64,
    doc: 'CMS requests in flight during a sync or a refresh (listing windows, details, one-item listings).',
  },
  syncDeriveUrls: {
    name: 'SYNC_DERIVE_URLS', kind: 'bool', default: 'true',
    doc: "Read the listing without `html_url` between full syncs and derive each page's from its parent's (`html_url` costs the CMS most of a listing item's time). `false`: read it as the CMS writes it, for a CMS whose URL routing does not follow the page tree.",
  },
  syncRetryMaxMs: {
    name: 'SYNC_RETRY_MAX', kind: 'duration', default: '5m', min: SECOND,
    doc: "Longest wait between retries after failed syncs while a snapshot serves (the backoff grows up to it; a CMS's Retry-After is honoured up to it). With no snapshot yet (not ready) the backoff stops at 5 s, or at this if shorter.",
  },
  fullSyncIntervalMs: {
    name: 'FULL_SYNC_INTERVAL', kind: 'duration', default: '1h', min: SECOND,
    doc: 'Time between two full syncs, which fetch every detail again (a body-only edit shows in no listing); the syncs between them re-fetch only what the listing shows changed. With SYNC_BUDGET: the shortest time between two re-reads of one page by the rolling verification.',
  },
  syncBudget: {
    name: 'SYNC_BUDGET', kind: 'percent', default: '0.5%', min: 0, max: 1,
    doc: "The share of one CMS worker's time the sync's safety net may use (the listing walk every SYNC_INTERVAL and the re-verification of every page within FULL_SYNC_INTERVAL), measured by the CMS's response times; shared equally by the Sites' trees (SITES), and in each, half of it paces the walk, half the verification. PURGE and webhook refreshes are outside it. 0: no budget, the walk at full SYNC_CONCURRENCY and a full sync every FULL_SYNC_INTERVAL.",
  },
  refreshDebounceMs: {
    name: 'REFRESH_DEBOUNCE', kind: 'duration', default: '100ms', min: 0, max: 10 * SECOND,
    doc: 'PURGE and webhook calls arriving within this time are handled by one refresh.',
  },
  purgeAllow: {
    name: 'PURGE_ALLOW', kind: 'cidrs', default: '127.0.0.1/32,::1/128',
    doc: 'Source addresses (CIDRs, comma-separated, or `none`) allowed to send PURGE; others need PURGE_TOKEN.',
  },
  purgeToken: {
    name: 'PURGE_TOKEN', kind: 'string', optional: true, example: 'a-long-random-string', secret: true,
    doc: 'Lets a PURGE from any address through when sent in the `X-Purge-Token` header. Unset: addresses only.',
  },
  refreshToken: {
    name: 'REFRESH_TOKEN', kind: 'string', optional: true, example: 'another-long-random-string', secret: true,
    doc: 'Bearer token of the `POST /-/refresh` webhook (at least 16 characters). Unset: the webhook is off.',
  },
  leaderLeaseMs: {
    name: 'LEADER_LEASE', kind: 'duration', default: '10s', min: 300, max: 10 * 60 * SECOND,
    doc: 'With Redis, one instance syncs under a lease of this length, renewed every third of it; another takes over within it when that one dies.',
  },
  cacheTagHeaders: {
    name: 'CACHE_TAG_HEADERS', kind: 'set', values: CACHE_TAG_HEADER_NAMES, default: 'surrogate-key',
    doc: 'Which purge-key headers 200s carry (page, parent, section), so a CDN in front can purge by the same keys: `surrogate-key` (Fastly, Varnish; space-separated), `cache-tag` (Cloudflare; comma-separated), both, or `none` (`true`/`false` mean both/none). Both carry the same keys; each costs every answer (docs/performance.md#header-costs).',
  },
  cacheStatusHeader: {
    name: 'CACHE_STATUS_HEADER', kind: 'bool', default: 'true',
    doc: 'Send `Cache-Status` (RFC 9211) saying where each answer came from: the snapshot, the read-through cache, or the CMS (docs/performance.md#header-costs).',
  },
  requestIdOnHits: {
    name: 'REQUEST_ID_ON_HITS', kind: 'bool', default: 'false',
    doc: 'Also give answers served from the snapshot or a fresh read-through entry (and their 304s) a generated `X-Request-Id`; by default only the others get one. An `X-Request-Id` the client sent is echoed on every answer.',
  },
  fastPath: {
    name: 'FAST_PATH', kind: 'bool', default: 'true',
    doc: 'Answer cached reads before Fastify routes them (same bytes and headers, logs and metrics); false sends every request through Fastify.',
  },
  privateApis: {
    name: 'PRIVATE_APIS', kind: 'bool', default: 'true',
    doc: 'Use the non-public Node and prom-client hooks that make hits cheaper (prepared header blocks, request metrics tallied at scrape, compacting the heap after a full sync), each only where a self-check at start finds it behaving as expected (logged, and `cms_shield_private_api`); false keeps to public APIs.',
  },
  upstreamTimeoutMs: {
    // undici reads a timeout of 0 as "no timeout", so 0 must not slip through.
    name: 'UPSTREAM_TIMEOUT', kind: 'duration', default: '10s', min: 100,
    doc: 'Time allowed for one request to the CMS, headers and whole body.',
  },
  upstreamConnections: {
    name: 'UPSTREAM_CONNECTIONS', kind: 'int', default: '16', min: 1, max: 256,
    doc: 'Connections to the CMS kept open (undici Pool size).',
  },
  upstreamRetries: {
    name: 'UPSTREAM_RETRIES', kind: 'int', default: '2', min: 0, max: 10,
    doc: 'Extra attempts of a GET that failed on the network, timed out or got 429/502/503/504.',
  },
  upstreamMaxBodyBytes: {
    // A body is decoded into one string, and V8 strings stop at about 512 MiB.
    name: 'UPSTREAM_MAX_BODY', kind: 'bytes', default: '64mb', min: 1024, max: 512 * MIB,
    doc: 'Largest CMS response body accepted; larger transfers are cut off.',
  },
  readThroughRate: {
    name: 'READ_THROUGH_RATE', kind: 'int', default: '10', min: 1, max: 100_000,
    doc: 'CMS requests per second that clients may cause (read-through misses), for all instances together with Redis; the sync and refreshes are not counted. Size it at a fifth of what the CMS answers per second.',
  },
  readThroughBurst: {
    name: 'READ_THROUGH_BURST', kind: 'int', default: '20', min: 1, max: 100_000,
    doc: 'Read-through requests that may go to the CMS at once after a quiet spell, on top of READ_THROUGH_RATE (token bucket).',
  },
  readThroughConcurrency: {
    name: 'READ_THROUGH_CONCURRENCY', kind: 'int', default: '4', min: 1, max: 256,
    doc: 'Most read-through requests in flight to the CMS per instance (their own connection pool); with READ_THROUGH_ADAPTIVE, the ceiling of a limit that follows the CMS\'s latency.',
  },
  readThroughAdaptive: {
    name: 'READ_THROUGH_ADAPTIVE', kind: 'bool', default: 'true',
    doc: 'Lower the read-through concurrency while the CMS answers slower than usual or fails, and raise it back while it keeps up.',
  },
  readThroughQueueTimeoutMs: {
    name: 'READ_THROUGH_QUEUE_TIMEOUT', kind: 'duration', default: '500ms', min: 0, max: 30 * SECOND,
    doc: 'How long a read-through miss may wait for a place in flight before it is answered 503 (0: at once).',
  },
  readThroughClientRate: {
    name: 'READ_THROUGH_CLIENT_RATE', kind: 'int', default: '2', min: 1, max: 100_000,
    doc: "One client's share: read-through misses per second it may cause (per instance); past it, 429 with Retry-After.",
  },
  readThroughClientBurst: {
    name: 'READ_THROUGH_CLIENT_BURST', kind: 'int', default: '10', min: 1, max: 100_000,
    doc: "Read-through misses one client may cause at once after a quiet spell, on top of READ_THROUGH_CLIENT_RATE.",
  },
  trustProxy: {
    name: 'TRUST_PROXY', kind: 'cidrs', default: 'none',
    doc: 'Load balancers (CIDRs, comma-separated, or `none`) whose `X-Forwarded-For` names the client; from any other socket, the socket\'s address is the client.',
  },
  frontendClients: {
    name: 'FRONTEND_CLIENTS', kind: 'cidrs', default: 'none',
    doc: "The site's own servers (SSR, ISR, static builds; CIDRs, or `none`), after TRUST_PROXY: their read-through misses skip the per-client share and spend only the CMS budget.",
  },
  frontendToken: {
    name: 'FRONTEND_TOKEN', kind: 'string', optional: true, example: 'a-long-random-string-for-the-frontend', secret: true,
    doc: 'The same for a client sending it as `X-Frontend-Token` (at least 16 characters), from any address.',
  },
  cacheTtlMs: {
    name: 'CACHE_TTL', kind: 'duration', default: '30s', min: 0,
    doc: 'Freshness of read-through entries (queries the tree index cannot answer); 0 revalidates every time.',
  },
  cacheNegativeTtlMs: {
    name: 'CACHE_NEGATIVE_TTL', kind: 'duration', default: '10s', min: 0,
    doc: "Freshness of the CMS's 400 and 404 answers to read-through queries, and the max-age of every 404 for an absent id or path (a CDN keeps it until the page's creation purges it).",
  },
  cacheStaleWhileRevalidateMs: {
    name: 'CACHE_STALE_WHILE_REVALIDATE', kind: 'duration', default: '60s', min: 0,
    doc: 'After CACHE_TTL, how long a read-through entry is still served while one background request refreshes it.',
  },
  cacheStaleIfErrorMs: {
    name: 'CACHE_STALE_IF_ERROR', kind: 'duration', default: '24h', min: 0,
    doc: 'After CACHE_TTL, how long a read-through entry is still served while the CMS fails.',
  },
  cacheTtlJitterPercent: {
    name: 'CACHE_TTL_JITTER_PERCENT', kind: 'int', default: '10', min: 0, max: 50,
    doc: 'Up to this share of CACHE_TTL is taken off each entry at random, so entries stored together expire apart.',
  },
  cacheMaxBytes: {
    name: 'CACHE_MAX_BYTES', kind: 'bytes', default: '64mb', min: 1024,
    doc: 'Memory for read-through entries (LRU).',
  },
  renderCacheMaxBytes: {
    name: 'RENDER_CACHE_MAX_BYTES', kind: 'bytes', default: '64mb', min: 1024,
    doc: 'Memory for rendered list bodies (LRU).',
  },
  redisUrl: {
    name: 'REDIS_URL', kind: 'string', optional: true, example: 'redis://127.0.0.1:6379',
    doc: 'Standalone Redis (`redis://` or `rediss://`) shared by every instance: read-through entries and the last good snapshot. Unset: no Redis.',
  },
  redisSentinels: {
    name: 'REDIS_SENTINELS', kind: 'string', optional: true, example: 'sentinel-1:26379,sentinel-2:26379',
    doc: 'Redis Sentinel addresses (`host:port,…`), instead of REDIS_URL; needs REDIS_SENTINEL_NAME.',
  },
  redisSentinelName: {
    name: 'REDIS_SENTINEL_NAME', kind: 'string', optional: true, example: 'mymaster',
    doc: 'The master name the Sentinels watch.',
  },
  redisClusterNodes: {
    name: 'REDIS_CLUSTER_NODES', kind: 'string', optional: true, example: 'redis-1:6379,redis-2:6379',
    doc: 'Seed nodes of a Redis Cluster (`host:port,…`), instead of REDIS_URL.',
  },
  redisPassword: {
    name: 'REDIS_PASSWORD', kind: 'string', optional: true, example: 'change-me', secret: true,
    doc: "Redis password (overrides one in REDIS_URL; for Sentinel and Cluster, the data nodes').",
  },
  redisPrefix: {
    name: 'REDIS_PREFIX', kind: 'string', default: 'cms-shield:',
    doc: 'Put before every Redis key and channel, so several deployments can share one Redis.',
  },
  redisCommandTimeoutMs: {
    name: 'REDIS_COMMAND_TIMEOUT', kind: 'duration', default: '250ms', min: 10,
    doc: 'A Redis command not answered within this counts as a miss; requests fall back to this process.',
  },
  snapshotFile: {
    name: 'SNAPSHOT_FILE', kind: 'string', optional: true, example: '/var/lib/cms-shield/snapshot.bin',
    doc: 'File that keeps the last good snapshot, so a restart serves at once even with the CMS down. Unset: none.',
  },
  snapshotPatchesPerFull: {
    name: 'SNAPSHOT_PATCHES_PER_FULL', kind: 'int', default: '50', min: 0, max: 10_000,
    doc: 'Changes stored (Redis, SNAPSHOT_FILE) as patches, what changed since the snapshot before, between two full snapshots; followers apply a patch instead of loading the whole tree, and a start reads the full snapshot plus the patches after it. 0: store every change whole.',
  },
  snapshotFullIntervalMs: {
    name: 'SNAPSHOT_FULL_INTERVAL', kind: 'duration', default: '10m', min: 0,
    doc: 'The first change this long after the last full snapshot is stored whole again, whatever SNAPSHOT_PATCHES_PER_FULL allows, so a start never applies patches from long ago.',
  },
  clientMaxAgeMs: {
    name: 'CLIENT_MAX_AGE', kind: 'duration', default: '30s', min: 0,
    doc: '`max-age` of the `Cache-Control` sent with every 200: how long browsers and CDNs may reuse an answer.',
  },
  clientStaleWhileRevalidateMs: {
    name: 'CLIENT_STALE_WHILE_REVALIDATE', kind: 'duration', default: '60s', min: 0,
    doc: '`stale-while-revalidate` of that `Cache-Control` (RFC 5861): how long a CDN may serve it while refreshing.',
  },
  clientStaleIfErrorMs: {
    name: 'CLIENT_STALE_IF_ERROR', kind: 'duration', default: '24h', min: 0,
    doc: '`stale-if-error` of that `Cache-Control` (RFC 5861): how long a CDN may serve it while cms-shield fails.',
  },
  cdnPurgeVarnish: {
    name: 'CDN_PURGE_VARNISH', kind: 'urls', optional: true, example: 'http://varnish-1:6081,http://varnish-2:6081',
    doc: 'Varnish base URLs (comma-separated) sent `PURGE /` with the changed surrogate keys after each swap (xkey vmod, docs/cdn-purging.md). Unset: none.',
  },
  cdnSoftPurge: {
    name: 'CDN_SOFT_PURGE', kind: 'bool', default: 'false',
    doc: 'Purge softly: Varnish `xkey-softpurge` and Fastly soft purge mark answers stale instead of dropping them (Cloudflare has no soft purge).',
  },
  fastlyServiceId: {
    name: 'FASTLY_SERVICE_ID', kind: 'string', optional: true, example: 'SU1Z0isxPaozGVKXdv0eY',
    doc: 'Fastly service purged by surrogate key after each swap; needs FASTLY_API_TOKEN. Unset: no Fastly.',
  },
  fastlyApiToken: {
    name: 'FASTLY_API_TOKEN', kind: 'string', optional: true, example: 'a-fastly-token-with-purge_select', secret: true,
    doc: 'Fastly API token (scope `purge_select`) sent as `Fastly-Key`; needs FASTLY_SERVICE_ID.',
  },
  fastlyApiUrl: {
    name: 'FASTLY_API_URL', kind: 'url', default: 'https://api.fastly.com',
    doc: "Base URL of Fastly's API.",
  },
  cloudflareZoneId: {
    name: 'CLOUDFLARE_ZONE_ID', kind: 'string', optional: true, example: '023e105f4ecef8ad9ca31a8372d0c353',
    doc: 'Cloudflare zone purged by cache tag after each swap; needs CLOUDFLARE_API_TOKEN. Unset: no Cloudflare.',
  },
  cloudflareApiToken: {
    name: 'CLOUDFLARE_API_TOKEN', kind: 'string', optional: true, example: 'a-cloudflare-token-with-cache-purge', secret: true,
    doc: 'Cloudflare API token (permission Cache Purge) sent as a bearer token; needs CLOUDFLARE_ZONE_ID.',
  },
  cloudflareApiUrl: {
    name: 'CLOUDFLARE_API_URL', kind: 'url', default: 'https://api.cloudflare.com/client/v4',
    doc: "Base URL of Cloudflare's API.",
  },
  cdnMaxAgeMs: {
    name: 'CDN_MAX_AGE', kind: 'duration', default: '1h', min: 0,
    doc: 'With a purge target configured, `s-maxage` of the `Cache-Control` (and with Fastly `Surrogate-Control: max-age`): how long the purged CDN keeps an answer; browsers keep CLIENT_MAX_AGE.',
  },
  cdnPurgeWaitMs: {
    name: 'CDN_PURGE_WAIT', kind: 'duration', default: '5s', min: 0, max: 5 * 60 * SECOND,
    doc: 'How long the syncing instance waits for every serving instance to confirm a new snapshot before it purges the CDN anyway (with a warning naming the laggards).',
  },
} as const satisfies { readonly [K in keyof Config]: VariableFor<Config[K]> }

/** The table as `[configKey, variable]` pairs, in docs order. */
export function variables(): ReadonlyArray<readonly [keyof Config, Variable]> {
  return Object.entries(schema) as Array<[keyof Config, Variable]>
}
