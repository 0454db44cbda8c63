import { describe, expect, it } from 'vitest'
import { createError } from '../errors.js'
import { TreeInconsistentError } from '../tree/build-snapshot.js'
import { classifySyncError, isPageSizeRefusal } from './sync-error.js'
import { badStatusError } from './upstream-port.js'

const now = () => 0
const answer = (status: number, headers: Record<string, string> = {}) => ({ status, contentType: 'application/json', headers, text: '{}' })

describe('classifySyncError', () => {
  it('takes the catalogue code of a ProxyError, SYNC_INCONSISTENT for a tree that is none, SYNC_FAILED otherwise', () => {
    expect(classifySyncError(createError('UPSTREAM_TIMEOUT', 'slow'), now).code).toBe('UPSTREAM_TIMEOUT')
    expect(classifySyncError(new TreeInconsistentError(['cycle']), now).code).toBe('SYNC_INCONSISTENT')
    expect(classifySyncError(new TypeError('bug'), now).code).toBe('SYNC_FAILED')
  })

  it('makes an Error of anything thrown', () => {
    const failure = classifySyncError('a string', now)
    expect(failure.error).toBeInstanceOf(Error)
    expect(failure.error.message).toBe('a string')
  })

  it('reads the wait the CMS asked for from a bad status only (RFC 9110 §10.2.3)', () => {
    expect(classifySyncError(badStatusError(answer(503, { 'retry-after': '120' }), 'down'), now).retryAfterMs).toBe(120_000)
    expect(classifySyncError(badStatusError(answer(503), 'down'), now).retryAfterMs).toBeUndefined()
    expect(classifySyncError(createError('UPSTREAM_TIMEOUT', 'slow', { details: { retryAfter: '5' } }), now).retryAfterMs).toBeUndefined()
  })
})

describe('isPageSizeRefusal', () => {
  it('is a 400 from the CMS, nothing else', () => {
    expect(isPageSizeRefusal(badStatusError(answer(400), 'limit'))).toBe(true)
    expect(isPageSizeRefusal(badStatusError(answer(404), 'gone'))).toBe(false)
    expect(isPageSizeRefusal(createError('UPSTREAM_BAD_RESPONSE', 'html', { details: { status: 400 } }))).toBe(false)
    expect(isPageSizeRefusal(new Error('400'))).toBe(false)
  })
})
