import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { PG_DEADLOCK_DETECTED, PG_SERIALIZATION_FAILURE, PG_UNIQUE_VIOLATION, pgErrorCode } from '../db/errors.ts'
import { DomainError } from '../lib/errors.ts'
import { statusOf } from './error-catalogue.ts'
import { ApiError, contentTooLarge, OAuthError, requestInvalid, type RequestContext } from './errors.ts'
import { toViolations, type SchemaError } from './violations.ts'

const CONTEXTS: Record<string, RequestContext> = { body: 'body', querystring: 'query', params: 'params', headers: 'headers' }

/** Maps whatever a request raised to the API's error: known failures keep their meaning, the rest is a 500. */
export function toApiError(error: unknown, bodyLimitBytes: number): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof DomainError) {
    const status = statusOf(error.code)
    if (status === 500) return new ApiError(500, 'internal_error', 'An unexpected error occurred; report the request id')
    return new ApiError(status, error.code, error.message, error.details, error.retryable && status === 503 ? { 'retry-after': String(error.retryAfterSeconds ?? 1) } : undefined)
  }
  const fastifyError = error as Partial<FastifyError> & { validation?: SchemaError[]; validationContext?: string }
  if (Array.isArray(fastifyError.validation)) {
    return requestInvalid(CONTEXTS[fastifyError.validationContext ?? 'body'] ?? 'body', toViolations(fastifyError.validation))
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return contentTooLarge('bytes', bodyLimitBytes, `The request body is larger than ${bodyLimitBytes} bytes`)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'content_type_unsupported', 'The request content type is not supported; send application/json')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return requestInvalid('body', [{ property: '', rule: 'required' }])
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError(400, 'request_invalid', 'The request body is not valid JSON', { context: 'body', violations: [{ property: '', rule: 'json' }] })
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, 'request_invalid', 'The Content-Length header does not match the body')
  }
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return new ApiError(400, 'request_invalid', 'The request body is not valid JSON', { context: 'body', violations: [{ property: '', rule: 'json' }] })
  }
  switch (pgErrorCode(error)) {
    case PG_UNIQUE_VIOLATION:
      return new ApiError(409, 'conflict', 'The request conflicts with an existing entity')
    case PG_SERIALIZATION_FAILURE:
    case PG_DEADLOCK_DETECTED:
      return new ApiError(503, 'service_unavailable', 'The request conflicted with concurrent changes; retry it', undefined, { 'retry-after': '1' })
  }
  const status = fastifyError.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) return clientFault(status)
  return new ApiError(500, 'internal_error', 'An unexpected error occurred; report the request id')
}

/** A refusal raised by a plugin or the framework with a 4xx status only: the catalogued code closest to it. */
function clientFault(status: number): ApiError {
  switch (status) {
    case 413:
      return new ApiError(413, 'content_too_large', 'The request content is larger than allowed')
    case 406:
    case 415:
      return new ApiError(415, 'content_type_unsupported', 'The request content type is not supported')
    case 404:
      return new ApiError(404, 'route_not_found', 'No operation answers this request')
    default:
      return new ApiError(400, 'request_invalid', 'The request could not be processed')
  }
}

export function errorHandler(bodyLimitBytes: number) {
  return function handle(error: unknown, request: FastifyRequest, reply: FastifyReply) {
    const oauthShape = request.routeOptions.config?.oauthErrors === true
    if (error instanceof OAuthError) {
      // RFC 6749 §5.2: a failed client authentication is 401 with the scheme to use; every other refusal is 400.
      const status = error.error === 'invalid_client' ? 401 : 400
      if (status === 401) reply.header('www-authenticate', 'Basic realm="tessera", charset="UTF-8"')
      return reply.status(status).send({ error: error.error, error_description: error.message })
    }
    const apiError = toApiError(error, bodyLimitBytes)
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
    if (oauthShape && (apiError.status === 400 || apiError.status === 413 || apiError.status === 415)) {
      // RFC 6749 §5.2: anything malformed in a token request is `invalid_request`.
      const violations = (apiError.details?.violations as { property: string; rule: string }[] | undefined) ?? []
      const description = violations.length > 0
        ? violations.map((v) => (v.rule === 'required' ? `Body must have required property '${v.property}'` : `Parameter '${v.property}' is invalid (${v.rule})`)).join('; ')
        : apiError.message
      return reply.status(400).send({ error: 'invalid_request', error_description: description })
    }
    if (apiError.headers) reply.headers(apiError.headers)
    if (error instanceof DomainError && (error.code === 'token_invalid' || error.code === 'token_expired')) reply.header('www-authenticate', bearerChallenge(request, error))
    return reply.status(apiError.status).send(apiError.toBody())
  }
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return reply.status(404).send({ code: 'route_not_found', message: `No operation answers ${request.method} ${request.url.split('?')[0]}` })
}

/**
 * RFC 6750 §3: a request without a bearer token is told the scheme; one whose token was refused is also told why.
 */
function bearerChallenge(request: FastifyRequest, error: DomainError): string {
  const sentToken = /^bearer \S/i.test(request.headers.authorization ?? '')
  return sentToken ? `Bearer realm="tessera", error="invalid_token", error_description="${error.message}"` : 'Bearer realm="tessera"'
}
