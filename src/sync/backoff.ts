/**
 * The sync's name for {@link retryDelay} (`src/backoff.ts`, the one backoff), which tests of the
 * sync's retries import.
 * @module
 */
export { retryDelay as syncRetryDelay } from '../backoff.js'
