/**
 * Which pages of a Site are translations of each other. Wagtail groups them by a `translation_key`
 * that its API never shows: the sync learns the groups from `?translation_of=` answers
 * (`sync/learn-translations.ts`) and the snapshot keeps them, so that `translation_of` is answered
 * here (docs/wagtail-compatibility.md#translations). Pure.
 * @module
 */
import { localesOf } from './page-meta.js'
import type { Snapshot } from './snapshot.js'

export class TranslationGroups {
  /** Each group of two or more pages, ids ascending; the groups ordered by their first id. */
  readonly groups: readonly (readonly number[])[]
  readonly #groupOf = new Map<number, readonly number[]>()

  private constructor(groups: readonly (readonly number[])[]) {
    this.groups = groups
    for (const group of groups) for (const id of group) this.#groupOf.set(id, group)
  }

  static readonly NONE = new TranslationGroups([])

  /** Groups from lists of pages known to share a key: overlapping lists are one group, single pages none. */
  static of(lists: Iterable<Iterable<number>>): TranslationGroups {
    const parent = new Map<number, number>()
    const find = (id: number): number => {
      let root = id
      while (parent.get(root)! !== root) root = parent.get(root)!
      // Path halving would do; a full compression keeps later finds one step long.
      let at = id
      while (at !== root) {
        const next = parent.get(at)!
        parent.set(at, root)
        at = next
      }
      return root
    }
    for (const list of lists) {
      let first: number | undefined
      for (const id of list) {
        if (!parent.has(id)) parent.set(id, id)
        if (first === undefined) first = id
        else {
          const a = find(first)
          const b = find(id)
          if (a !== b) parent.set(b, a)
        }
      }
    }
    const members = new Map<number, number[]>()
    for (const id of parent.keys()) {
      const root = find(id)
      const group = members.get(root)
      if (group) group.push(id)
      else members.set(root, [id])
    }
    const groups: number[][] = []
    for (const group of members.values()) if (group.length > 1) groups.push(group.sort((a, b) => a - b))
    groups.sort((a, b) => a[0]! - b[0]!)
    return new TranslationGroups(groups.map((group) => Object.freeze(group)))
  }

  /** Every page of `id`'s group but itself (`queryset.translation_of(page)`), ids ascending. */
  translationsOf(id: number): readonly number[] {
    const group = this.#groupOf.get(id)
    return group === undefined ? [] : group.filter((member) => member !== id)
  }

  isTranslation(of: number, id: number): boolean {
    return of !== id && this.#groupOf.get(of) !== undefined && this.#groupOf.get(of) === this.#groupOf.get(id)
  }

  has(id: number): boolean {
    return this.#groupOf.has(id)
  }

  /** The groups restricted to the pages `keep` accepts (those still on the Site). */
  restrictedTo(keep: (id: number) => boolean): TranslationGroups {
    let dropped = false
    for (const id of this.#groupOf.keys()) {
      if (!keep(id)) {
        dropped = true
        break
      }
    }
    return dropped ? TranslationGroups.of(this.groups.map((group) => group.filter(keep))) : this
  }

  /** What the fingerprint and the stored metadata hold. */
  toJSON(): readonly (readonly number[])[] {
    return this.groups
  }
}

/**
 * The groups `translation_of` is answered from, or `undefined` when only the CMS knows them. A Site
 * whose listing shows one language has no translations on it: translations of a page differ in
 * locale, and the API lists only the Site's pages. A listing that shows no language (i18n off)
 * says nothing, and the CMS answers.
 */
export function translationsOf(snapshot: Snapshot): TranslationGroups | undefined {
  if (snapshot.translations !== undefined) return snapshot.translations
  return localesOf(snapshot).size === 1 ? TranslationGroups.NONE : undefined
}
