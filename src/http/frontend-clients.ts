/**
 * Which requests come from the site's own servers (FRONTEND_CLIENTS, FRONTEND_TOKEN): a website's
 * SSR server or static build is one address for all its readers, so the per-client share of the
 * CMS budget, meant to keep one anonymous client from starving the others, would throttle the
 * whole site (docs/operations.md#the-cms-budget). Their misses spend the CMS budget alone, which
 * still bounds the CMS's load. Pure.
 * @module
 */
import type { AddressList } from '../config/cidr.js'
import { createSecretCheck } from './purge-access.js'

export interface FrontendClientsOptions {
  /** Client addresses (after TRUST_PROXY) of the site's own servers. */
  readonly addresses: AddressList
  /** FRONTEND_TOKEN: a matching `X-Frontend-Token` header counts from any address. */
  readonly token?: string | undefined
}

/**
 * `(client, tokenHeader)` → the identity whose share a miss spends: the client's address, or
 * `undefined` for the site's own servers (no share: the CMS budget alone).
 */
export type ShareOf = (client: string | undefined, tokenHeader: string | string[] | undefined) => string | undefined

export function createShareOf(options: FrontendClientsOptions): ShareOf {
  const tokenMatches = options.token ? createSecretCheck(options.token) : undefined
  return (client, tokenHeader) => {
    if (client !== undefined && options.addresses.has(client)) return undefined
    // A repeated header is ambiguous: it counts for nothing.
    if (tokenMatches !== undefined && typeof tokenHeader === 'string' && tokenMatches(tokenHeader)) return undefined
    return client
  }
}
