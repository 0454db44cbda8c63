/**
 * Which of the CMS's Sites a request is for, as Wagtail's `Site.find_for_request` decides it from
 * the hostname (docs/wagtail-compatibility.md#sites): a Host naming one of the configured Sites
 * (SITES) is that Site's; any other Host, or none, gets the default Site. The port plays no part:
 * Wagtail compares its own listening port, which a client's Host does not carry.
 * @module
 */

/** The configured Site a Host header names (its hostname, lower-case), or `undefined` for the default Site. */
export type SiteOfHost = (host: string | undefined) => string | undefined

export function createSiteOfHost(sites: readonly string[]): SiteOfHost {
  if (sites.length === 0) return () => undefined
  const known = new Set(sites)
  return (host) => {
    if (host === undefined || host.startsWith('[')) return undefined
    const colon = host.indexOf(':')
    // Django's split_domain_port drops a trailing dot; hostnames compare without case.
    const hostname = (colon < 0 ? host : host.slice(0, colon)).replace(/\.$/, '').toLowerCase()
    return known.has(hostname) ? hostname : undefined
  }
}
