/**
 * Django `QueryDict` semantics for the query string (docs/wagtail-compatibility.md#query-string-semantics): `&`-separated, `+` is a space, repeated
 * keys keep every value but `get` returns the last one, keys iterate in order of first appearance.
 * @module
 */
import { quotePlus } from './python-semantics.js'

export class QueryDict {
  private readonly lists = new Map<string, string[]>()

  constructor(queryString: string) {
    for (const [key, value] of new URLSearchParams(queryString)) {
      const values = this.lists.get(key)
      if (values) values.push(value)
      else this.lists.set(key, [value])
    }
  }

  has(key: string): boolean {
    return this.lists.has(key)
  }

  /** The last value of `key` (Django's `QueryDict.__getitem__`). */
  get(key: string): string | undefined {
    const values = this.lists.get(key)
    return values?.[values.length - 1]
  }

  keys(): string[] {
    return [...this.lists.keys()]
  }

  /** `(key, last value)` in first-appearance order, like `request.GET.items()`. */
  *items(): IterableIterator<[string, string]> {
    for (const [key, values] of this.lists) yield [key, values[values.length - 1] as string]
  }

  /**
   * `QueryDict.urlencode()` without the given keys: every value of every key, `quote_plus`-encoded
   * (so `,` becomes `%2C`, verified on find's redirect).
   */
  urlencodeWithout(excluded: readonly string[]): string {
    const parts: string[] = []
    for (const [key, values] of this.lists) {
      if (excluded.includes(key)) continue
      for (const value of values) parts.push(`${quotePlus(key)}=${quotePlus(value)}`)
    }
    return parts.join('&')
  }
}
