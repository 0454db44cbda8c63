import { describe, expect, it } from 'vitest'
import { writesAt } from './logging.js'

describe('writesAt: is a request line written at this level?', () => {
  it('writes info lines at info, debug and trace, and none at warn, error or silent', () => {
    expect(['trace', 'debug', 'info'].map((level) => writesAt(level, 'info'))).toEqual([true, true, true])
    expect(['warn', 'error', 'fatal', 'silent'].map((level) => writesAt(level, 'info'))).toEqual([false, false, false, false])
    expect(writesAt('info', 'debug')).toBe(false)
  })
})
