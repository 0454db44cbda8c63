/**
 * RFC 9110 §13.1.2: when the client's copy is current, send the validators, not the body.
 * @module
 */
import { notModifiedAnswer, type HttpAnswer } from './answers.js'
import { ifNoneMatchMatches } from './validators.js'

/** Each 200's 304 is built once, like the 200 itself. */
const notModified = new WeakMap<HttpAnswer, HttpAnswer>()

export function conditionalAnswer(answer: HttpAnswer, ifNoneMatch: string | undefined): HttpAnswer {
  const etag = answer.status === 200 ? answer.headers['etag'] : undefined
  if (etag === undefined || ifNoneMatch === undefined || !ifNoneMatchMatches(ifNoneMatch, etag)) return answer
  let answer304 = notModified.get(answer)
  if (!answer304) notModified.set(answer, (answer304 = notModifiedAnswer(answer)))
  return answer304
}
