/**
 * Django's `DateTimeField.to_python` for a filter value (`?first_published_at=`), decided before
 * the CMS is asked: Wagtail's FieldsFilter does not catch the `ValidationError` it raises, so the
 * CMS answers an HTML 500 for an unparsable value (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500).
 *
 * Django tries `datetime.fromisoformat`, then its own `datetime_re`, then `parse_date`
 * (`date.fromisoformat`, then `date_re`). The regexes are mimicked exactly (Python's `\d` is any
 * Unicode digit, `$` also matches before a final newline, `\s` is `str.isspace`). What
 * `fromisoformat` accepts depends on the CMS's Python version (3.11 widened it), so a value only
 * it could accept is left to the CMS: the verdict is then `unknown`.
 * @module
 */
import { pythonInt } from './python-int.js'

export type DateTimeVerdict =
  | { readonly kind: 'valid' }
  /** Certainly refused by Django, with its own ValidationError text. */
  | { readonly kind: 'invalid'; readonly message: string }
  /** Only the CMS's `fromisoformat` can say. */
  | { readonly kind: 'unknown' }

const D = '\\p{Nd}'
/** Python's `\s` on str patterns: exactly the characters `str.isspace()` accepts. */
const S = '[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]'
/** Python's `$`: the end, or just before a newline that ends the string. */
const END = '\\n?$'

/** django/utils/dateparse.py `datetime_re`. */
const DATETIME_RE = new RegExp(
  `^(?<year>${D}{4})-(?<month>${D}{1,2})-(?<day>${D}{1,2})` +
    `[T ](?<hour>${D}{1,2}):(?<minute>${D}{1,2})` +
    `(?::(?<second>${D}{1,2})(?:[.,](?<microsecond>${D}{1,6})${D}{0,6})?)?` +
    `${S}*(?<tzinfo>Z|[+-]${D}{2}(?::?${D}{2})?)?${END}`,
  'u',
)

/** django/utils/dateparse.py `date_re`. */
const DATE_RE = new RegExp(`^(?<year>${D}{4})-(?<month>${D}{1,2})-(?<day>${D}{1,2})${END}`, 'u')

/** `fromisoformat` starts with four ASCII digits in every Python version. */
const ISO_START = /^[0-9]{4}/

const messages = {
  invalid: (value: string) =>
    `“${value}” value has an invalid format. It must be in YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ] format.`,
  invalidDate: (value: string) => `“${value}” value has the correct format (YYYY-MM-DD) but it is an invalid date.`,
  invalidDatetime: (value: string) =>
    `“${value}” value has the correct format (YYYY-MM-DD HH:MM[:ss[.uuuuuu]][TZ]) but it is an invalid date/time.`,
}

/** Python's `int()` of a group the regex already proved to be digits. */
function num(text: string | undefined): number {
  if (text === undefined) return 0
  const parsed = pythonInt(text)
  return parsed.ok ? Number(parsed.value) : NaN
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Python's `datetime.date(year, month, day)` range check (proleptic Gregorian, years 1–9999). */
function validDate(year: number, month: number, day: number): boolean {
  if (year < 1 || year > 9999 || month < 1 || month > 12 || day < 1) return false
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return day <= DAYS_IN_MONTH[month - 1]! + (month === 2 && leap ? 1 : 0)
}

/** `datetime.datetime(**kw, tzinfo=get_fixed_timezone(offset))`: every field in range, |offset| < 24 h. */
function validDatetime(groups: Record<string, string | undefined>): boolean {
  if (!validDate(num(groups['year']), num(groups['month']), num(groups['day']))) return false
  if (num(groups['hour']) > 23 || num(groups['minute']) > 59 || num(groups['second']) > 59) return false
  const tz = groups['tzinfo']
  if (tz === undefined || tz === 'Z') return true
  const chars = Array.from(tz)
  const minutes = 60 * num(chars.slice(1, 3).join('')) + (chars.length > 3 ? num(chars.slice(-2).join('')) : 0)
  return minutes < 24 * 60
}

/**
 * What `DateTimeField.to_python(value)` does with a query-string value.
 *
 * @example djangoDateTime('2024-05-06') // { kind: 'valid' }
 * @example djangoDateTime('abc').kind // 'invalid'
 */
export function djangoDateTime(value: string): DateTimeVerdict {
  const datetime = DATETIME_RE.exec(value)
  if (datetime) {
    const groups = datetime.groups ?? {}
    if (validDatetime(groups)) return { kind: 'valid' }
    // `T24:00` is midnight of the next day to some Python versions' fromisoformat: their call.
    if (num(groups['hour']) === 24 && ISO_START.test(value)) return { kind: 'unknown' }
    return { kind: 'invalid', message: messages.invalidDatetime(value) }
  }
  const date = DATE_RE.exec(value)
  if (date) {
    const groups = date.groups ?? {}
    return validDate(num(groups['year']), num(groups['month']), num(groups['day']))
      ? { kind: 'valid' }
      : { kind: 'invalid', message: messages.invalidDate(value) }
  }
  // `20240506`, `2024-W19`, `2024-05-06T10`…: valid or not by the CMS's Python version.
  if (ISO_START.test(value)) return { kind: 'unknown' }
  return { kind: 'invalid', message: messages.invalid(value) }
}
