/**
 * What a forwarded query's answer teaches about what does not exist in the CMS, for
 * `known-absent.ts` to remember: facts that decide other queries than the one asked.
 * @module
 */
import type { Snapshot } from '../tree/snapshot.js'
import { findPathKey, type KnownAbsent } from './known-absent.js'
import { typesUnknownToSnapshot } from './plan-steps.js'
import type { QueryParams } from './query-params.js'
import { wagtailErrors } from './wagtail-messages.js'

/** Reads the CMS's answer; true when it taught something (and `known` now holds it). */
export type AbsentLesson = (status: number, body: Buffer) => boolean

const messageOf = (error: { readonly body: { readonly message: string } | { readonly detail: string } }) =>
  'message' in error.body ? error.body.message : undefined

const TYPE_DOES_NOT_EXIST = messageOf(wagtailErrors.typeDoesNotExist)
const FIND_NOT_FOUND = messageOf(wagtailErrors.findNotFound)

/** `{"message": …}` of a JSON error body, or `undefined`. */
function bodyMessage(body: Buffer): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'))
    if (typeof parsed !== 'object' || parsed === null) return undefined
    const message = (parsed as { message?: unknown }).message
    return typeof message === 'string' ? message : undefined
  } catch {
    return undefined
  }
}

/**
 * The lesson a forwarded query can teach, or `undefined` when its answer can teach nothing:
 * - `type` is the first thing every pages view reads, and one name that does not resolve fails
 *   the whole list with "type doesn't exist" (400). With exactly one name the snapshot has not
 *   seen, that answer says the name does not exist.
 * - find reads `html_path` before `id`, and answers "not found" (404) only when the path gave no
 *   page in the queryset (`type`, `site`) and the id, if any, gave none either.
 * @param view which pages view the query was sent to.
 */
export function absentLesson(view: 'listing' | 'detail' | 'find', params: QueryParams, snapshot: Snapshot, known: KnownAbsent): AbsentLesson | undefined {
  const unknownTypes = typesUnknownToSnapshot(params, snapshot)
  const typeName = unknownTypes?.length === 1 ? unknownTypes[0] : undefined
  const htmlPath = view === 'find' ? params.get('html_path') : undefined
  const pathKey = htmlPath === undefined ? undefined : findPathKey(htmlPath, params.get('type'), params.get('site'))
  if (typeName === undefined && pathKey === undefined) return undefined
  return (status, body) => {
    if (typeName !== undefined && status === 400 && bodyMessage(body) === TYPE_DOES_NOT_EXIST) {
      known.addType(typeName)
      return true
    }
    if (pathKey !== undefined && status === 404 && bodyMessage(body) === FIND_NOT_FOUND) {
      known.addFindPath(pathKey)
      return true
    }
    return false
  }
}
