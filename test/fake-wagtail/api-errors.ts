/**
 * The two ways a Wagtail API request fails: a JSON error answered by the view, or an uncaught exception
 * that Django turns into its HTML 500 page (docs/wagtail-compatibility.md#inputs-wagtail-answers-with-a-500).
 * @module
 */

/** `BadRequestError` (400, `{"message"}`), `Http404` (404, `{"message"}`) or a DRF error (`{"detail"}`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly payload: Readonly<Record<string, string>>,
  ) {
    super(Object.values(payload)[0] ?? '')
  }
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, { message })
}

export function notFound(message: string): ApiError {
  return new ApiError(404, { message })
}

/** An exception Wagtail does not catch (e.g. `?site=nope`, `find/?id=abc`): Django's HTML 500 page. */
export class ServerError extends Error {}
