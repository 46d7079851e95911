/** The one error type services throw; the error handler turns it into `{code, message, details?}`. */
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

/** An RFC 6749 §5.2 error: `{error, error_description}` rather than the API's envelope. */
export class OAuthError extends Error {
  readonly status: 400 | 401
  readonly error: string
  constructor(status: 400 | 401, error: string, description: string) {
    super(description)
    this.status = status
    this.error = error
  }
}

export interface ErrorBody {
  code: string
  message: string
  details?: Record<string, unknown>
}

export interface Violation {
  property: string
  rule: string
  ruleParams?: Record<string, unknown>
}

export type RequestContext = 'body' | 'query' | 'params' | 'headers'

const entityNames: Record<string, string> = {
  'external-account': 'external account',
  'request-for-information': 'request for information',
}

export function notFound(entity: string, details: Record<string, unknown> = {}): ApiError {
  const name = entityNames[entity] ?? entity.replace(/-/g, ' ')
  return new ApiError(404, 'entity_not_found', `The ${name} cannot be found`, { ...details, entity })
}

export function requestInvalid(context: RequestContext, violations: Violation[]): ApiError {
  return new ApiError(400, 'request_invalid', 'The request has missing or invalid parameters', { context, violations })
}

export function conflict(code: string, message: string, details?: Record<string, unknown>): ApiError {
  return new ApiError(409, code, message, details)
}

export function operationNotAllowed(message: string, reasons?: string[]): ApiError {
  return new ApiError(409, 'operation_not_allowed', message, reasons ? { reasons } : undefined)
}

/** The specification gives threshold limits as strings (§2.1). */
export function contentTooLarge(unit: 'characters' | 'bytes', limit: number, message: string): ApiError {
  return new ApiError(413, 'content_too_large', message, { threshold: { unit, limit: String(limit) } })
}
