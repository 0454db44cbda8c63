import { describe, expect, it } from 'vitest'
import { formatReport } from '../../scripts/verify/report.js'
import type { VerifyRun } from '../../scripts/verify/run-verify.js'
import type { Result } from '../../scripts/verify/types.js'

const refused = (n: number, status: number): Result => ({
  request: { n, method: 'GET', view: 'listing', target: `/api/v2/images/?limit=${n}`, kind: 'images one parameter', endpoint: 'images' },
  verdict: { outcome: 'over-budget', notes: [`shield ${status} Retry-After: 1`], group: 'over budget' },
  cms: { ok: true, answer: { status: 200, headers: {}, body: Buffer.from('{}') } },
  shield: { ok: true, answer: { status, headers: { 'retry-after': '1' }, body: Buffer.from('{}') } },
})

function run(results: Result[]): VerifyRun {
  return {
    paths: { api: '/api/v2/', pages: '/api/v2/pages/' },
    bases: { cms: 'http://localhost', shield: 'https://shield.example' },
    site: { limitMax: 20, totalCount: 0, pages: [], types: [], hosts: [], locales: ['en'] },
    discoveryRequests: 0,
    results,
    counts: { identical: 0, documented: 0, differ: 0, 'over-budget': results.length, failed: 0 },
  }
}

describe('formatReport', () => {
  it("names the read-through queue settings when the shield's refusals were 503s of a busy CMS, not only the rate", () => {
    const busy = formatReport(run([refused(0, 503), refused(1, 429)])).join('\n')
    expect(busy).toContain('READ_THROUGH_CLIENT_RATE')
    expect(busy).toContain('1 of them were 503s')
    expect(busy).toContain('READ_THROUGH_QUEUE_TIMEOUT')
    expect(formatReport(run([refused(0, 429)])).join('\n')).not.toContain('READ_THROUGH_QUEUE_TIMEOUT')
    expect(formatReport(run([refused(0, 503)])).at(-1)).toBe('verify: 0/1 identical')
  })
})
