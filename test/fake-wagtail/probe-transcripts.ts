/**
 * Parses probe transcripts like `fixtures/wagtail-probes-7.4.3.txt` (`### METHOD TARGET [-H 'Name: value']…`, status line,
 * headers, `BODY:` then the exact body) so tests can replay them against the fake.
 * @module
 */

export interface Transcript {
  readonly title: string
  readonly method: string
  readonly target: string
  readonly requestHeaders: Readonly<Record<string, string>>
  readonly status: number
  /** Lower-cased names. */
  readonly headers: ReadonlyMap<string, string>
  /** Exact body bytes (cut at Content-Length when given); `undefined` when the capture truncated it. */
  readonly body: Buffer | undefined
}

export function parseTranscripts(text: string): Transcript[] {
  const blocks = text.split(/\n(?=### )/).filter((block) => block.startsWith('### '))
  return blocks.map((block) => {
    const titleEnd = block.indexOf('\n')
    const title = block.slice(4, titleEnd)
    const [method = '', target = ''] = title.split(' ')
    const requestHeaders: Record<string, string> = {}
    for (const match of title.matchAll(/-H '([^:]+): ([^']*)'/g)) requestHeaders[match[1] as string] = match[2] as string
    const bodyMark = block.indexOf('BODY:')
    const head = block.slice(titleEnd + 1, bodyMark).split('\n').filter((line) => line !== '')
    const status = Number((head[0] ?? '').split(' ')[0])
    const headers = new Map<string, string>()
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':')
      headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 2))
    }
    const rawBody = Buffer.from(block.slice(bodyMark + 'BODY:'.length), 'utf8')
    const length = headers.get('content-length')
    let body: Buffer | undefined
    if (rawBody.includes('...[truncated')) body = undefined
    else if (method === 'HEAD' || length === undefined) body = Buffer.alloc(0)
    else body = rawBody.subarray(0, Number(length))
    return { title, method, target, requestHeaders, status, headers, body }
  })
}
