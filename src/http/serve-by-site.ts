/**
 * The serving core of each Site's tree, chosen by the request's Host as Wagtail chooses the Site
 * (`site-of-host.ts`): a Host naming one of the other Sites (SITES) is answered from that Site's
 * tree, any other from the default Site's. Each Site's core remembers its own answers.
 * @module
 */
import type { Serve, ServeRequest } from './serve.js'
import type { SiteOfHost } from './site-of-host.js'

export function bySite<R extends ServeRequest>(byDefault: Serve<R>, others: ReadonlyArray<readonly [string, Serve<R>]>, siteOf: SiteOfHost): Serve<R> {
  if (others.length === 0) return byDefault
  const serves = new Map(others)
  return (request, requestId) => {
    const host = request.headers.host
    const site = siteOf(Array.isArray(host) ? host[0] : host)
    return ((site === undefined ? undefined : serves.get(site)) ?? byDefault)(request, requestId)
  }
}
