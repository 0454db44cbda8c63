import { describe, expect, it } from 'vitest'
import { createEndpointGenerations } from '../cache/endpoint-generations.js'
import { createEndpointPurge } from './endpoint-purge.js'

const quiet = { warn: () => undefined }
const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('a PURGE of another endpoint', () => {
  it('renews its generation, tells the other instances, and only then purges its key at the CDN', async () => {
    const generations = createEndpointGenerations({ now: () => 7, random: () => 0 })
    const steps: string[] = []
    let told: (() => void) | undefined
    const purge = createEndpointPurge({
      generations,
      cluster: () => ({
        shareEndpointGeneration: (endpoint, generation) => {
          steps.push(`share ${endpoint} ${generation}`)
          return new Promise<void>((resolve) => (told = resolve))
        },
      }),
      cdn: { delivery: { enqueue: (keys: readonly string[], at: number) => steps.push(`purge ${keys.join(' ')} at ${at}`) } as never },
      now: () => 42,
      logger: quiet,
    })
    purge.endpoint('images')
    await settle()
    expect(steps).toEqual([`share images ${generations.of('images')}`])
    told!()
    await settle()
    expect(steps).toEqual([`share images ${generations.of('images')}`, 'purge cms-endpoint-images at 42'])
  })

  it('purges at the CDN even when the others could not be told, and without a cluster', async () => {
    const purged: string[] = []
    const delivery = { enqueue: (keys: readonly string[]) => purged.push(...keys) } as never
    const generations = createEndpointGenerations({ now: () => 7, random: () => 0 })
    createEndpointPurge({ generations, cluster: () => ({ shareEndpointGeneration: () => Promise.reject(new Error('redis down')) }), cdn: { delivery }, now: () => 1, logger: quiet }).endpoint('documents')
    createEndpointPurge({ generations, cluster: () => undefined, cdn: { delivery }, now: () => 1, logger: quiet }).endpoint('images')
    await settle()
    await settle()
    expect(purged.sort()).toEqual(['cms-endpoint-documents', 'cms-endpoint-images'])
  })
})
