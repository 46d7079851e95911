import type { FastifyReply, FastifyRequest } from 'fastify'
import Type from 'typebox'
import type { Db } from '../db/schema.ts'
import { sha256Hex } from '../lib/secrets.ts'
import { ApiError, requestInvalid } from './errors.ts'
import * as repository from './idempotency.repository.ts'
import type { IdempotencyScope } from './idempotency.repository.ts'
import type { App } from './types.ts'

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key'
export const REPLAYED_HEADER = 'idempotent-replayed'
/** How long a key remembers its first response. */
export const KEY_LIFETIME_MS = 24 * 60 * 60 * 1000
/** How long a first request owns its key; past it a retry may take over (the first one died). */
export const LEASE_MS = 60_000
const PURGE_INTERVAL_MS = 10 * 60_000
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/
/** Response headers a replay repeats besides the body. */
const REPLAYED_HEADERS = ['content-type', 'etag', 'location']

export const IdempotencyKeyHeader = {
  'idempotency-key': Type.Optional(
    Type.String({
      description:
        'Makes the creation safe to retry: a retry with the same key and body (from the same client, within 24 hours) ' +
        'returns the first response with `Idempotent-Replayed: true` instead of creating again. The same key with ' +
        'another body is 422 `idempotency_key_reused`; a retry while the first request runs is 409 ' +
        '`idempotency_request_in_progress`. 1 to 255 printable ASCII characters, e.g. a UUID.',
    }),
  ),
}

export const REPLAYED_RESPONSE_HEADER = {
  'idempotent-replayed': { type: 'string', enum: ['true'], description: 'Present on a response replayed for an `Idempotency-Key` retry.' },
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** POSTs that create something accept `Idempotency-Key`. */
    idempotent?: boolean
  }
  interface FastifyRequest {
    idempotency: IdempotencyScope | null
  }
}

/** A digest of what makes two requests the same: operation, acting subject and body. */
export function requestHash(operation: string, onBehalfOf: string | undefined, body: unknown): string {
  return sha256Hex(`${operation}\n${onBehalfOf ?? ''}\n${JSON.stringify(body ?? null)}`)
}

function fingerprint(request: FastifyRequest): { operation: string; requestHash: string } {
  const operation = `${request.method} ${request.routeOptions.url ?? request.url}`
  const onBehalfOf = request.headers['x-on-behalf-of']
  return { operation, requestHash: requestHash(operation, typeof onBehalfOf === 'string' ? onBehalfOf : undefined, request.body) }
}

/**
 * `Idempotency-Key` for the routes that opt in (`config.idempotent`). The key is claimed before the
 * handler runs and the response stored when it is sent; a 5xx releases the key so the retry runs again.
 */
export function registerIdempotency(app: App, db: Db): void {
  app.decorateRequest('idempotency', null)

  const claim = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.principal) return
    const key = request.headers[IDEMPOTENCY_KEY_HEADER]
    if (key === undefined) return
    if (typeof key !== 'string' || !KEY_FORMAT.test(key)) {
      throw requestInvalid('headers', [{ property: IDEMPOTENCY_KEY_HEADER, rule: 'pattern', ruleParams: { pattern: '1 to 255 printable ASCII characters' } }])
    }
    const scope = { organizationId: request.principal.organizationId, clientId: request.principal.clientId, key }
    const request_ = fingerprint(request)
    const now = new Date()
    const claimed = await repository.claimKey(db, scope, request_, {
      now,
      lockedUntil: new Date(now.getTime() + LEASE_MS),
      expiresAt: new Date(now.getTime() + KEY_LIFETIME_MS),
    })
    if (claimed) {
      request.idempotency = scope
      return
    }
    const existing = await repository.findKey(db, scope)
    if (!existing || existing.request_hash !== request_.requestHash) {
      throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was already used with a different request')
    }
    if (existing.status === 'running') {
      throw new ApiError(409, 'idempotency_request_in_progress', 'A request with this Idempotency-Key is still being processed; retry later', undefined, { 'retry-after': '1' })
    }
    return reply
      .headers({ ...(existing.response_headers ?? {}), [REPLAYED_HEADER]: 'true' })
      .status(existing.response_status ?? 200)
      .send(existing.response_body ?? '')
  }

  const complete = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const scope = request.idempotency
    if (!scope) return payload
    request.idempotency = null
    if (reply.statusCode >= 500 || (typeof payload !== 'string' && payload !== null && payload !== undefined)) {
      await repository.releaseKey(db, scope)
      return payload
    }
    const headers: Record<string, string> = {}
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name)
      if (value !== undefined) headers[name] = String(value)
    }
    await repository.completeKey(db, scope, { status: reply.statusCode, headers, body: payload ?? '' })
    return payload
  }

  // Route-level hooks: the routes that do not opt in (nearly all) pay nothing for the mechanism.
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return
    route.preHandler = [...asArray(route.preHandler), claim]
    route.onSend = [...asArray(route.onSend), complete]
  })

  // Expired keys are ignored when met; this keeps the table from growing with keys never met again.
  const purge = setInterval(() => void repository.purgeExpiredKeys(db, new Date()).catch(() => {}), PURGE_INTERVAL_MS)
  purge.unref()
  app.addHook('onClose', async () => clearInterval(purge))
}

function asArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}
