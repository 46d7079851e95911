import { randomUUID } from 'node:crypto'
import http, { type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { toApiError } from './error-handler.ts'
import { ApiError } from './errors.ts'
import { REQUEST_ID_HEADER } from './openapi.ts'

/** Node's HTTP parser refused what the client sent, before any request existed: the answer for each failure. */
function parserError(code: string | undefined, maxHeaderSize: number): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(431, 'headers_too_large', `The request line and header fields are larger than ${maxHeaderSize} bytes`, {
        threshold: { unit: 'bytes', limit: String(maxHeaderSize) },
      })
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError(413, 'content_too_large', 'The chunk extensions of the request body are too large')
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(408, 'request_timeout', 'The request was not received in time')
    default:
      return new ApiError(400, 'request_invalid', 'The request is not valid HTTP/1.1: its request line, a header field or the body framing is malformed')
  }
}

/**
 * Answers a connection whose request Node's HTTP parser refused (a header section too large, a malformed request
 * line or header field, broken body framing, a client too slow to send its headers): the error envelope with a
 * request id, as every other answer, then the connection is closed. Nothing is written when a response on the
 * connection has already begun: a second one would corrupt it (Node's own rule).
 */
export function clientErrorHandler() {
  // Fastify calls it with the instance as `this`.
  return function handle(this: { log: FastifyBaseLogger }, error: Error & { code?: string }, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const requestId = randomUUID()
    const apiError = parserError(error.code, http.maxHeaderSize)
    // Not the error itself: its raw packet holds what the client sent, credentials included.
    this.log.info({ requestId, code: error.code, reason: error.message, status: apiError.status }, 'client error')
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
    if (socket.writable && !inFlight?.headersSent) {
      const body = JSON.stringify(apiError.toBody())
      socket.write(
        `HTTP/1.1 ${apiError.status} ${http.STATUS_CODES[apiError.status]}\r\n` +
          'Connection: close\r\n' +
          'Content-Type: application/json; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          `${REQUEST_ID_HEADER}: ${requestId}\r\n` +
          '\r\n' +
          body,
      )
    }
    socket.destroy(error)
  }
}

/**
 * Failures the router meets before a route is found (a path that does not decode as UTF-8): answered in the
 * envelope, with the request id, like the errors of routes.
 */
export function frameworkErrorHandler(bodyLimitBytes: number) {
  return function handle(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
    const apiError = error.code === 'FST_ERR_BAD_URL'
      ? new ApiError(400, 'request_invalid', 'The request path is not a valid percent-encoded UTF-8 URL')
      : toApiError(error, bodyLimitBytes)
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
    void reply.header(REQUEST_ID_HEADER, request.id).status(apiError.status).send(apiError.toBody())
  }
}
