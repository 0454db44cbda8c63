import { describe, expect, it } from 'vitest'
import { createSupersededKeys } from './superseded-keys.js'

describe('superseded cache keys', () => {
  it('names the digest a query was answered under before, once, and nothing while it stays', () => {
    const keys = createSupersededKeys()
    expect(keys.replace('search=a', 'd1')).toBeUndefined()
    expect(keys.replace('search=a', 'd1')).toBeUndefined()
    expect(keys.replace('search=a', 'd2')).toBe('d1')
    expect(keys.replace('search=a', 'd2')).toBeUndefined()
    expect(keys.replace('search=b', 'd2')).toBeUndefined()
  })

  it('forgets everything past its bound instead of growing', () => {
    const keys = createSupersededKeys(2)
    keys.replace('a', 'd1')
    keys.replace('b', 'd1')
    keys.replace('c', 'd1') // starts over: a and b are forgotten
    expect(keys.replace('a', 'd2')).toBeUndefined()
    expect(keys.replace('c', 'd2')).toBe('d1')
  })
})
