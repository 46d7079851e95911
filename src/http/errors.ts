import * as domain from '../lib/errors.ts'
import type { DomainError, ErrorBody, RequestContext, Violation } from '../lib/errors.ts'
import { statusOf } from './error-catalogue.ts'

export type { ErrorBody, RequestContext, Violation }

/**
 * An error that is an HTTP matter (a malformed request, a missing token, the transport's limits): it carries
 * its status and headers. Services raise `DomainError` (src/lib/errors.ts) instead, which the catalogue maps.
 */
export { OAuthError } from '../lib/errors.ts'

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly details: Record<string, unknown> | undefined
  readonly headers: Record<string, string> | undefined

  constructor(status: number, code: string, message: string, details?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.details = details
    this.headers = headers
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details }
  }
}


/** A refusal the edge makes itself, worded as the domain's (src/lib/errors.ts), with the catalogue's status. */
function atEdge(error: DomainError): ApiError {
  return new ApiError(statusOf(error.code), error.code, error.message, error.details)
}

export function requestInvalid(context: RequestContext, violations: Violation[]): ApiError {
  return atEdge(domain.requestInvalid(context, violations))
}

export function contentTooLarge(unit: 'characters' | 'bytes', limit: number, message: string): ApiError {
  return atEdge(domain.contentTooLarge(unit, limit, message))
}
