import { describe, expect, it } from 'vitest'
import { assertConnected, late } from './late.js'

describe('a late part', () => {
  it('throws, naming the part, when read before it is connected', () => {
    const cluster = late<string | undefined>('the cluster')
    const read = cluster.get
    expect(read).toThrow(/the cluster was read before the composition root connected it/)
    cluster.set(undefined)
    expect(read()).toBeUndefined()
    expect(() => cluster.set('again')).toThrow(/the cluster was connected twice/)
  })

  it('assertConnected names the parts phase 2 left unset', () => {
    const parts = { fastPath: late<number>('fast path'), gate: late<number>('gate') }
    parts.gate.set(1)
    expect(() => assertConnected(parts)).toThrow('not connected: fastPath')
    parts.fastPath.set(2)
    expect(() => assertConnected(parts)).not.toThrow()
  })
})
