/**
 * What a PURGE of one of the router's other endpoints does: a new generation of that endpoint's
 * read-through answers here, the same on every other instance (with Redis), and then a purge of
 * the endpoint's key at the CDN, once the others have been told, so that the layer in front does
 * not fetch an old answer again from an instance that has not heard yet.
 * @module
 */
import type { EndpointGenerations } from '../cache/endpoint-generations.js'
import type { ClusterCoordinator } from '../cluster/cluster-coordinator.js'
import type { LogSink } from '../observability/log-sink.js'
import { endpointKey } from '../tree/surrogate-keys.js'
import type { CdnParts } from './after-swap.js'

export interface EndpointPurgeOptions {
  readonly generations: EndpointGenerations
  readonly cluster: Pick<ClusterCoordinator, 'shareEndpointGeneration'> | undefined
  readonly cdn: Pick<CdnParts, 'delivery'>
  readonly now: () => number
  readonly logger: Pick<LogSink, 'warn'>
}

export interface ScopePurge {
  /** A PURGE of one of an endpoint's URLs. */
  endpoint(name: string): void
}

export function createEndpointPurge(options: EndpointPurgeOptions): ScopePurge {
  function purge(scope: string, cdnKey: string): void {
    const generation = options.generations.renew(scope)
    const purgedAt = options.now()
    void Promise.resolve(options.cluster?.shareEndpointGeneration(scope, generation))
      .catch((error: unknown) => options.logger.warn({ err: error, scope }, 'purge: could not tell the other instances'))
      .then(() => options.cdn.delivery?.enqueue([cdnKey], purgedAt))
  }
  return {
    endpoint: (name) => purge(name, endpointKey(name)),
  }
}
