/**
 * Entity tags and conditional requests (RFC 9110 §8.8.3, §13.1.2). Each rendered body gets one
 * strong ETag, computed once when the body is rendered, never per request.
 * @module
 */
import { createHash } from 'node:crypto'

/** A strong validator for `body`: a digest of its bytes, so equal bytes share a tag across instances. */
export function computeEtag(body: Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
}

const etags = new WeakMap<Buffer, string>()

/**
 * The ETag of a rendered body, computed on first use and remembered with the body itself: detail
 * bodies live in the snapshot, list bodies in the render cache, read-through bodies in theirs.
 */
export function etagOf(body: Buffer): string {
  let etag = etags.get(body)
  if (etag === undefined) {
    etag = computeEtag(body)
    etags.set(body, etag)
  }
  return etag
}

/** The opaque part of an entity tag (`W/"x"` and `"x"` compare equal under the weak comparison). */
function opaque(tag: string): string {
  const trimmed = tag.trim()
  return trimmed.startsWith('W/') ? trimmed.slice(2) : trimmed
}

/**
 * `If-None-Match` evaluation for GET/HEAD: true when the header is `*` or lists a tag that
 * matches `etag` by the weak comparison (RFC 9110 §13.1.2), i.e. the client's copy is current.
 */
export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  // What a client sends back most of the time: the tag exactly as it got it.
  if (header === etag) return true
  const value = header.trim()
  if (value === '*') return true
  const target = opaque(etag)
  // Entity tags cannot contain commas (RFC 9110 §8.8.3: etagc excludes them), so a split is exact.
  for (const candidate of value.split(',')) if (opaque(candidate) === target) return true
  return false
}
