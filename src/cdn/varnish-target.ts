/**
 * Varnish with the xkey vmod: `PURGE /` with the keys space-separated in `xkey-purge` (or
 * `xkey-softpurge`), the wire contract of docs/cdn-purging.md#varnish-xkey.
 * @module
 */
import { exchange, type PurgeHttp, type PurgeTarget } from './purge-target.js'

/**
 * Keeps the header under Varnish's default 8 KB request header limit (`http_req_hdr_len`): keys of
 * at most `MAX_KEY_LENGTH` bytes and their separators (docs/cdn-purging.md#varnish-xkey).
 */
export const VARNISH_MAX_KEYS = 120

export interface VarnishTargetOptions {
  /** Base URL, `http://host:port` (a path prefix is kept: `PURGE <prefix>/`). */
  readonly baseUrl: string
  readonly soft: boolean
  readonly http: PurgeHttp
}

export function createVarnishTarget(options: VarnishTargetOptions): PurgeTarget {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/`
  const header = options.soft ? 'xkey-softpurge' : 'xkey-purge'
  return {
    name: 'varnish',
    where: options.baseUrl,
    maxKeys: VARNISH_MAX_KEYS,
    purge: (keys, signal) => exchange(options.http, { url, method: 'PURGE', headers: { [header]: keys.join(' ') } }, signal),
  }
}
