/**
 * A stored snapshot's metadata: the JSON object after its header (`snapshot-framing.ts`), stored
 * uncompressed so that choosing among several stored snapshots costs a checksum, not a
 * decompression and a parse of each. A patch's metadata starts with the same fields.
 *
 * A snapshot does not know where its bodies came from, so the metadata carries the UPSTREAM_URL it
 * was synced from and the BASE_URL its `detail_url`s were rewritten to.
 * @module
 */
import type { DateOrders, Dialect, Snapshot } from '../tree/snapshot.js'
import { TranslationGroups } from '../tree/translations.js'
import { NOT_ACCEPTABLE_TEXT } from '../query/wagtail-messages.js'

export interface SnapshotMetadata {
  readonly dialect: Dialect
  /** The UPSTREAM_URL the pages were synced from. */
  readonly upstreamUrl: string
  /** The BASE_URL the stored bodies' `detail_url`s point at. */
  readonly baseUrl: string
  readonly syncedAt: number
  /** Absent in snapshots stored before incremental syncs: read as 0 (a full sync is due). */
  readonly fullSyncedAt?: number
  readonly version: number
  readonly fingerprint: string
  /** Absent when not learned (and in snapshots stored before they were). */
  readonly translations?: TranslationGroups
}

export interface StoredMetadata extends SnapshotMetadata {
  readonly formatVersion: number
  readonly pageCount: number
}

/** The configuration a stored snapshot must have been made for. */
export interface SnapshotOrigin {
  readonly upstreamUrl: string
  readonly baseUrl: string
}

/** The metadata's fields as stored (a patch's metadata starts with the same). */
export function metadataFields(input: SnapshotMetadata): Record<string, unknown> {
  const { dialect } = input
  return {
    upstreamUrl: input.upstreamUrl,
    baseUrl: input.baseUrl,
    syncedAt: input.syncedAt,
    fullSyncedAt: input.fullSyncedAt ?? input.syncedAt,
    version: input.version,
    fingerprint: input.fingerprint,
    dialect: {
      limitMax: dialect.limitMax, emptyTypeIgnored: dialect.emptyTypeIgnored, findKeepsQuery: dialect.findKeepsQuery, nulInTextFilter: dialect.nulInTextFilter,
      notAcceptableText: dialect.notAcceptableText,
      ...(dialect.unlistedLocale === undefined ? {} : { unlistedLocale: dialect.unlistedLocale }),
      ...(dialect.dateOrders === undefined ? {} : { dateOrders: dialect.dateOrders }),
    },
    ...(input.translations === undefined ? {} : { translations: input.translations.groups }),
  }
}

export function metadataOf(snapshot: Snapshot, origin: SnapshotOrigin): SnapshotMetadata {
  return {
    dialect: snapshot.dialect,
    upstreamUrl: origin.upstreamUrl,
    baseUrl: origin.baseUrl,
    syncedAt: snapshot.syncedAt,
    fullSyncedAt: snapshot.fullSyncedAt,
    version: snapshot.version,
    fingerprint: snapshot.fingerprint,
    ...(snapshot.translations === undefined ? {} : { translations: snapshot.translations }),
  }
}

/** The metadata, or why it is not valid (a patch's too: it starts with the same fields). */
export function readMetadata(value: unknown, formatVersion: number): StoredMetadata | string {
  if (!isObject(value)) return 'snapshot metadata is not an object'
  const { upstreamUrl, baseUrl, syncedAt, fullSyncedAt, version, fingerprint, dialect, pageCount, translations } = value
  if (typeof upstreamUrl !== 'string' || typeof baseUrl !== 'string') return 'snapshot metadata lacks its URLs'
  if (typeof syncedAt !== 'number' || !Number.isFinite(syncedAt)) return 'snapshot metadata has no valid syncedAt'
  if (!isCount(version)) return 'snapshot metadata has no valid version'
  if (typeof fingerprint !== 'string' || fingerprint === '') return 'snapshot metadata has no fingerprint'
  if (!isCount(pageCount)) return 'snapshot metadata has no valid page count'
  const parsedDialect = readDialect(dialect)
  if (!parsedDialect) return 'snapshot metadata has no valid dialect'
  const full = typeof fullSyncedAt === 'number' && Number.isFinite(fullSyncedAt) ? fullSyncedAt : 0
  const groups = readTranslations(translations)
  if (groups === null) return 'snapshot metadata has malformed translations'
  return {
    upstreamUrl, baseUrl, syncedAt, fullSyncedAt: full, version, fingerprint, dialect: parsedDialect, pageCount, formatVersion,
    ...(groups === undefined ? {} : { translations: groups }),
  }
}

/** Stored translation groups: `undefined` when absent, `null` when malformed. */
function readTranslations(value: unknown): TranslationGroups | undefined | null {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) return null
  for (const group of value) {
    if (!Array.isArray(group) || !group.every((id) => Number.isSafeInteger(id) && (id as number) > 0)) return null
  }
  return TranslationGroups.of(value as number[][])
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

/** A stored dialect, the fields learned later read as their defaults when absent. */
function readDialect(value: unknown): Dialect | undefined {
  if (!isObject(value)) return undefined
  const { limitMax, emptyTypeIgnored, findKeepsQuery, nulInTextFilter, notAcceptableText, unlistedLocale, dateOrders } = value
  if (limitMax !== null && !isCount(limitMax)) return undefined
  if (typeof emptyTypeIgnored !== 'boolean' || typeof findKeepsQuery !== 'boolean') return undefined
  // Learned later than the others: a snapshot stored before has none, and gets the refusal.
  return {
    limitMax, emptyTypeIgnored, findKeepsQuery,
    nulInTextFilter: nulInTextFilter === 'matches-nothing' ? 'matches-nothing' : 'refused',
    notAcceptableText: typeof notAcceptableText === 'string' && notAcceptableText !== '' ? notAcceptableText : NOT_ACCEPTABLE_TEXT,
    // Absent in snapshots stored before it was learned: `locale` is then answered by the CMS.
    ...(typeof unlistedLocale === 'string' && unlistedLocale !== '' ? { unlistedLocale } : {}),
    ...(isDateOrders(dateOrders) ? { dateOrders } : {}),
  }
}

/** A stored `Dialect.dateOrders`: anything else reads as nothing learned (the CMS orders those types). */
function isDateOrders(value: unknown): value is DateOrders {
  return isObject(value) && Object.values(value).every((fields) => isObject(fields) && Object.values(fields).every((kind) => kind === 'date' || kind === 'datetime'))
}
