import { describe, expect, it } from 'vitest'
import { parseCliOptions, UsageError } from '../../scripts/verify/cli-options.js'
import { pacer, type Clock } from '../../scripts/verify/pacer.js'

function fakeClock(): Clock & { starts: number[] } {
  let now = 0
  return {
    starts: [],
    now: () => now,
    sleep: async (ms) => {
      now += ms
    },
  }
}

describe('pacer', () => {
  it('starts requests one interval apart', async () => {
    const clock = fakeClock()
    const slots = pacer(10, 100, clock)
    for (let i = 0; i < 5; i++) {
      await slots.acquire()
      clock.starts.push(clock.now())
      slots.release()
    }
    expect(clock.starts).toEqual([0, 100, 200, 300, 400])
  })

  it('keeps at most maxInFlight running: the next waits for a release', async () => {
    const clock = fakeClock()
    const slots = pacer(1000, 2, clock)
    await slots.acquire()
    await slots.acquire()
    let third = false
    const pending = slots.acquire().then(() => {
      third = true
    })
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(third).toBe(false)
    slots.release()
    await pending
    expect(third).toBe(true)
  })
})

describe('parseCliOptions', () => {
  it('reads the options, with defaults', () => {
    expect(parseCliOptions(['--cms', 'https://cms.example/', '--shield=http://127.0.0.1:8080'])).toEqual({
      cms: 'https://cms.example', shield: 'http://127.0.0.1:8080', requests: 1000, seed: 1, rate: 10, timeoutMs: 10000,
    })
    expect(parseCliOptions(['--cms', 'http://a', '--shield', 'http://b', '--requests', '5', '--seed', '0', '--rate', '2.5', '--out', 'x.json', '--shield-base', 'https://api.example'])).toMatchObject({
      requests: 5, seed: 0, rate: 2.5, out: 'x.json', shieldBase: 'https://api.example',
    })
  })

  it('reads the API path, the pages endpoint, the other endpoints and the Host', () => {
    const base = ['--cms', 'http://a', '--shield', 'http://b']
    expect(parseCliOptions([...base, '--api-path', '/api/v2/', '--endpoints', 'images, documents,', '--host', 'partner.localhost:8701'])).toMatchObject({
      apiPath: '/api/v2/', endpoints: ['images', 'documents'], host: 'partner.localhost:8701',
    })
    expect(parseCliOptions([...base, '--api-path=/cms-api', '--pages-endpoint', 'content'])).toMatchObject({ apiPath: '/cms-api/', pagesEndpoint: 'content' })
    expect(parseCliOptions(base)).not.toHaveProperty('host')
    expect(parseCliOptions(base)).not.toHaveProperty('apiPath')
  })

  it('refuses an API path, endpoint or Host it cannot send', () => {
    const base = ['--cms', 'http://a', '--shield', 'http://b']
    for (const extra of [['--api-path', 'api/v2/'], ['--api-path', '/api/v2/?x=1'], ['--api-path', '/api v2/'], ['--endpoints', 'images/x'], ['--endpoints', 'pages'],
      ['--pages-endpoint', 'content', '--endpoints', 'content'], ['--host', 'a b'], ['--host', 'partner.localhost\r\nX: y'], ['--host', '']]) {
      expect(() => parseCliOptions([...base, ...extra]), extra.join(' ')).toThrow(UsageError)
    }
  })

  it('refuses what it cannot use', () => {
    for (const argv of [[], ['--cms', 'http://a'], ['--cms', 'ftp://a', '--shield', 'http://b'], ['--cms', 'http://a', '--shield', 'http://b', '--rate', '0'],
      ['--cms', 'http://a', '--shield', 'http://b', '--requests', '1.5'], ['--cms', 'http://a', '--shield', 'http://b', '--nope', '1'], ['--cms']]) {
      expect(() => parseCliOptions(argv), argv.join(' ')).toThrow(UsageError)
    }
  })
})
