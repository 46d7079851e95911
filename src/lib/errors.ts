/**
 * Domain errors: what services, the ledger and money flows raise when they refuse something. They carry a
 * machine code, a message for people, optional details, and whether trying again later may succeed. They
 * know nothing of HTTP: the edge (src/http/error-catalogue.ts) maps each code to its status, and the worker
 * decides whether to retry a step from `retryable`, never from a status.
 */

/** Every code a domain error may carry. The HTTP catalogue must give each one a status (the compiler checks). */
export const ERROR_CODES = [
  'account_archived',
  'account_has_balance',
  'account_has_pending_transactions',
  'asset_feature_not_available',
  'asset_not_supported',
  'card_type_not_allowed',
  'conflict',
  'content_too_large',
  'content_type_unsupported',
  'country_not_supported',
  'crypto_address_invalid',
  'crypto_address_signature_invalid',
  'date_invalid',
  'duplicate',
  'email_already_exists',
  'entity_not_found',
  'file_already_uploaded',
  'file_content_type_not_allowed',
  'file_invalid',
  'headers_too_large',
  'hold_not_open',
  'idempotency_key_reused',
  'idempotency_request_in_progress',
  'insufficient_balance',
  'internal_error',
  'invalid_number',
  'json_patch_failed',
  'ledger_reference_reused',
  'link_already_used',
  'locale_invalid',
  'max_files_limit_exceeded',
  'number_invalid',
  'operation_not_allowed',
  'phone_already_exists',
  'phone_invalid',
  'po_boxes_not_allowed',
  'postal_code_invalid',
  'precondition_failed',
  'rail_feature_not_available',
  'remitter_and_recipient_cannot_match',
  'request_invalid',
  'request_timeout',
  'route_not_found',
  'service_unavailable',
  'signature_expired',
  'signature_invalid',
  'subdivision_not_supported',
  'subject_not_allowed',
  'terms_of_service_mismatch',
  'token_expired',
  'token_insufficient_scopes',
  'token_invalid',
  'token_revoked',
  'too_many_requests',
  'transaction_amount_invalid',
  'transaction_node_invalid',
  'transaction_reference_reused',
  'user_capability_failure',
  'webhook_endpoints_limit_exceeded',
] as const

export type ErrorCode = (typeof ERROR_CODES)[number]

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

export class DomainError extends Error {
  readonly code: ErrorCode
  readonly details: Record<string, unknown> | undefined
  /** True when the same request may succeed later (a provider was unreachable, a lock timed out). */
  readonly retryable: boolean
  /** For a retryable error: how long to wait before trying again, when the thrower knows better than a second. */
  readonly retryAfterSeconds: number | undefined

  constructor(code: ErrorCode, message: string, options: { details?: Record<string, unknown>; retryable?: boolean; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'DomainError'
    this.code = code
    this.details = options.details
    this.retryable = options.retryable ?? options.retryAfterSeconds !== undefined
    this.retryAfterSeconds = options.retryAfterSeconds
  }

  toBody(): ErrorBody {
    return this.details === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, details: this.details }
  }
}

/**
 * Whether a failed attempt at some work may succeed when tried again. A domain error says so itself; anything
 * else (a dropped connection, a deadlock, a bug) is assumed transient, so that it is retried with backoff and,
 * if it persists, ends as a failure after the last attempt rather than at the first.
 */
export function isRetryable(error: unknown): boolean {
  return error instanceof DomainError ? error.retryable : true
}

const entityNames: Record<string, string> = {
  'external-account': 'external account',
  'request-for-information': 'request for information',
}

export function notFound(entity: string, details: Record<string, unknown> = {}): DomainError {
  const name = entityNames[entity] ?? entity.replace(/-/g, ' ')
  return new DomainError('entity_not_found', `The ${name} cannot be found`, { details: { ...details, entity } })
}

export function conflict(code: ErrorCode, message: string, details?: Record<string, unknown>): DomainError {
  return new DomainError(code, message, { details })
}

export function operationNotAllowed(message: string, reasons?: string[]): DomainError {
  return new DomainError('operation_not_allowed', message, { details: reasons ? { reasons } : undefined })
}

export function requestInvalid(context: RequestContext, violations: Violation[]): DomainError {
  return new DomainError('request_invalid', 'The request has missing or invalid parameters', { details: { context, violations } })
}

/** The specification gives threshold limits as strings (§2.1). */
export function contentTooLarge(unit: 'characters' | 'bytes', limit: number, message: string): DomainError {
  return new DomainError('content_too_large', message, { details: { threshold: { unit, limit: String(limit) } } })
}

/**
 * A refusal of an OAuth 2.0 token request (RFC 6749 §5.2), answered as `{error, error_description}` rather than
 * the API's envelope. `invalid_client` is a failed client authentication (401 at the edge); the rest are 400.
 */
export class OAuthError extends Error {
  readonly error: 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unauthorized_client' | 'unsupported_grant_type' | 'invalid_scope'
  constructor(error: OAuthError['error'], description: string) {
    super(description)
    this.name = 'OAuthError'
    this.error = error
  }
}
