/**
 * What the sync and the read-through need from the CMS client: one GET. Keeping the port this
 * small lets tests drive both with anything that answers (the fake origin, a stub).
 * @module
 */
export interface UpstreamAnswer {
  readonly status: number
  /** The response's Content-Type, lower-cased ('' when absent). */
  readonly contentType: string
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly text: string
  /**
   * The body's raw bytes, when the client has them: a listing window's digest is taken over these,
   * not over `text` (which the hash would encode back into UTF-8 first).
   */
  readonly bytes?: Buffer
}

export type UpstreamGet = (pathAndQuery: string, signal?: AbortSignal) => Promise<UpstreamAnswer>

export function isJson(answer: UpstreamAnswer): boolean {
  const type = answer.contentType.split(';')[0]!.trim().toLowerCase()
  return type === 'application/json' || type.endsWith('+json')
}
