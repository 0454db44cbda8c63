/**
 * Generations of the router's other endpoints' read-through answers (`http/endpoints-service.ts`).
 * Their answers depend on nothing the sync holds, so nothing else says when they changed: a PURGE
 * of one of an endpoint's URLs starts a new generation, whose name is part of every cache key of
 * that endpoint, and answers of an older one are never read again (they age out of both tiers).
 * With Redis, the instance that took the PURGE tells the others the new name
 * (`cluster-channel.ts`), so every instance asks for the same keys; an instance that starts later
 * reads the recorded names, and until it has, its generations are its own (answers stored in
 * Redis under an older name are never read).
 * @module
 */

export interface EndpointGenerations {
  /** The current generation's name (`0` until a PURGE names the endpoint). */
  of(endpoint: string): string
  /** Starts a new generation; returns its name, for the other instances to adopt. */
  renew(endpoint: string): string
  /** Takes a generation another instance started. */
  adopt(endpoint: string, generation: string): void
  /** The recorded generation read at start (`undefined`: none recorded): taken unless one was adopted meanwhile. */
  settle(endpoint: string, recorded: string | undefined): void
}

export const FIRST_GENERATION = '0'

export interface EndpointGenerationsOptions {
  readonly now: () => number
  readonly random: () => number
  /** Shared with other instances (Redis): start unsettled, until `settle` or `adopt`. */
  readonly shared?: boolean
}

export function createEndpointGenerations(options: EndpointGenerationsOptions): EndpointGenerations {
  const current = new Map<string, string>()
  const settled = new Set<string>()
  // Time first, so names never repeat across restarts; the random part tells apart two
  // instances renewing within one millisecond.
  const fresh = () => `${options.now().toString(36)}${Math.floor(options.random() * 36 ** 4).toString(36)}`
  const unsettled = options.shared === true ? `u${fresh()}` : undefined
  return {
    of: (endpoint) => current.get(endpoint) ?? unsettled ?? FIRST_GENERATION,
    renew(endpoint) {
      const name = fresh()
      current.set(endpoint, name)
      settled.add(endpoint)
      return name
    },
    adopt(endpoint, generation) {
      current.set(endpoint, generation)
      settled.add(endpoint)
    },
    settle(endpoint, recorded) {
      if (settled.has(endpoint)) return
      current.set(endpoint, recorded ?? FIRST_GENERATION)
      settled.add(endpoint)
    },
  }
}
