/**
 * Who may send PURGE. Wagtail's HTTPBackend sends no credentials of its own (docs/wagtail-compatibility.md#wire-format: method,
 * path, Host, User-Agent, nothing else), so the default gate is the socket's source address
 * (`PURGE_ALLOW`). A custom backend or a proxy in between can instead send `X-Purge-Token`
 * (`PURGE_TOKEN`). Forwarded headers are never consulted: anyone can write them.
 *
 * Secrets are compared in constant time: both sides are hashed to equal-length SHA-256 digests
 * first, so neither the content nor the length of the configured token leaks through timing.
 * Pure of Fastify.
 * @module
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { AddressList } from '../config/cidr.js'

export interface PurgeAccessOptions {
  /** Socket addresses allowed without a token (`PURGE_ALLOW`). */
  readonly allow: AddressList
  /** `PURGE_TOKEN`: lets any address in with a matching `X-Purge-Token` header. Empty counts as unset. */
  readonly token?: string | undefined
}

export interface PurgeAccess {
  /**
   * @param remoteAddress the socket's peer address (`request.socket.remoteAddress`).
   * @param tokenHeader the `X-Purge-Token` header as Node reports it.
   */
  check(remoteAddress: string | undefined, tokenHeader: string | string[] | undefined): boolean
}

export function createPurgeAccess(options: PurgeAccessOptions): PurgeAccess {
  const tokenMatches = options.token ? createSecretCheck(options.token) : undefined
  return {
    check(remoteAddress, tokenHeader) {
      if (options.allow.has(remoteAddress)) return true
      // A repeated header is ambiguous: refuse it rather than guess which copy counts.
      return tokenMatches !== undefined && typeof tokenHeader === 'string' && tokenMatches(tokenHeader)
    },
  }
}

/**
 * A constant-time comparison against one secret (shared with the refresh webhook's bearer token).
 * @throws TypeError for an empty secret, which would let an empty credential through.
 */
export function createSecretCheck(secret: string): (candidate: string) => boolean {
  if (secret === '') throw new TypeError('a secret to compare against must not be empty')
  const expected = digest(secret)
  return (candidate) => timingSafeEqual(digest(candidate), expected)
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}
