import { createHmac } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import Type from 'typebox'
import type { Db, Tx } from '../db/schema.ts'
import type { Schedules } from '../jobs/schedules.ts'
import { toApiError } from './error-handler.ts'
import { ApiError, requestInvalid } from './errors.ts'
import * as repository from './idempotency.repository.ts'
import { withoutAudit } from '../modules/audit/index.ts'
import type { IdempotencyScope } from './idempotency.repository.ts'
import { hooksOf, type App } from './types.ts'

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key'
export const REPLAYED_HEADER = 'idempotent-replayed'
/** How long a key remembers its first response. */
export const KEY_LIFETIME_MS = 24 * 60 * 60 * 1000
/** How long a first request owns its key; past it a retry may take over (the first one died). */
export const LEASE_MS = 60_000
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
    /**
     * POSTs that create something accept `Idempotency-Key`. `true`: the key is claimed before the handler and its
     * answer stored after. `'atomic'` (money): the handler records the key inside its own database transaction
     * with `atomicIdempotency`, so that key and movement commit together.
     */
    idempotent?: boolean | 'atomic'
  }
  interface FastifyRequest {
    idempotency: IdempotencyScope | null
  }
  interface FastifyInstance {
    /** Keys the digests of requests stored with their Idempotency-Key (see `requestHash`). */
    requestDigestKey: Buffer
  }
}

/**
 * A digest of what makes two requests the same: operation, acting subject and body. Keyed (HMAC-SHA256 under a
 * key derived from the sealing key), because a body may hold a secret — a card's number and security code — and
 * a plain hash stored beside the key would let anyone who reads the database confirm guesses of it offline.
 */
export function requestHash(key: Buffer, operation: string, onBehalfOf: string | undefined, body: unknown): string {
  return createHmac('sha256', key).update(`${operation}\n${onBehalfOf ?? ''}\n${JSON.stringify(body ?? null)}`).digest('hex')
}

function fingerprint(request: FastifyRequest): { operation: string; requestHash: string } {
  const operation = `${request.method} ${request.routeOptions.url ?? request.url}`
  const onBehalfOf = request.headers['x-on-behalf-of']
  return { operation, requestHash: requestHash(request.server.requestDigestKey, operation, typeof onBehalfOf === 'string' ? onBehalfOf : undefined, request.body) }
}

/** The request's Idempotency-Key, checked: undefined when it has none, 400 when it is malformed. */
function keyOf(request: FastifyRequest): string | undefined {
  const key = request.headers[IDEMPOTENCY_KEY_HEADER]
  if (key === undefined) return undefined
  if (typeof key !== 'string' || !KEY_FORMAT.test(key)) {
    throw requestInvalid('headers', [{ property: IDEMPOTENCY_KEY_HEADER, rule: 'pattern', ruleParams: { pattern: '1 to 255 printable ASCII characters' } }])
  }
  return key
}

/** Answers a retry with the key's first answer: 422 for another request under the key, 409 while the first runs. */
async function replay(db: Db, scope: IdempotencyScope, requestHash: string, reply: FastifyReply): Promise<FastifyReply> {
  const existing = await repository.findKey(db, scope)
  if (!existing || existing.request_hash !== requestHash) {
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

/**
 * `Idempotency-Key` for the routes that opt in (`config.idempotent`). The key is claimed before the
 * handler runs and the response stored when it is sent; a 5xx releases the key so the retry runs again.
 */
export function registerIdempotency(app: App, db: Db, digestKey: Buffer): void {
  app.decorate('requestDigestKey', digestKey)
  app.decorateRequest('idempotency', null)

  const claim = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.principal) return
    const key = keyOf(request)
    if (key === undefined) return
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
    return replay(db, scope, request_.requestHash, reply)
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
    if (route.config?.idempotent !== true) return
    route.preHandler = [...hooksOf(route.preHandler), claim]
    route.onSend = [...hooksOf(route.onSend), complete]
  })
}

export const IDEMPOTENCY_PURGE_SCHEDULE = 'idempotency.purge'

/**
 * Registers `idempotency.purge`: every 10 minutes, the keys expired at the period's start are deleted. Expired keys
 * are ignored when met; this keeps the table from growing with keys never met again.
 */
export function registerIdempotencyPurge(schedules: Schedules, db: Db): void {
  schedules.register({
    name: IDEMPOTENCY_PURGE_SCHEDULE,
    periodMs: 10 * 60_000,
    run: async ({ periodStart }) => {
      await repository.purgeExpiredKeys(db, periodStart)
    },
  })
}

/** Thrown inside a guarded database transaction when the key already committed: the work rolls back and the first answer is replayed. */
class KeyAlreadyCommitted extends Error {}

const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * Runs a money-moving creation under its `Idempotency-Key`, atomically: the key's record is written by `work`
 * inside the database transaction of the movement (through the guard it is given), with the answer, so a
 * crash at any point leaves either both or neither. A retry whose key committed gets the first answer
 * (`Idempotent-Replayed: true`); one that arrives while the first still runs waits on the key's row and then
 * gets it too; the same key with another request is 422 `idempotency_key_reused`. A refusal (4xx) is stored
 * under the key after the rollback, so that a retry answers the same. Without a key, `work` gets null.
 */
export async function atomicIdempotency<T>(
  db: Db,
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  work: (guard: { claim(tx: Tx): Promise<void>; complete(tx: Tx, status: number, body: unknown): Promise<void>; replace(status: number, body: unknown): Promise<void> } | null) => Promise<T>,
): Promise<FastifyReply> {
  const key = keyOf(request)
  if (key === undefined || !request.principal) return reply.status(status).send(await work(null))
  const scope = { organizationId: request.principal.organizationId, clientId: request.principal.clientId, key }
  const fingerprint_ = fingerprint(request)
  const replayFirst = () => replay(db, scope, fingerprint_.requestHash, reply)
  const times = () => {
    const now = new Date()
    return { now, lockedUntil: now, expiresAt: new Date(now.getTime() + KEY_LIFETIME_MS) }
  }
  // Most retries come after the first answer: replay without opening a transaction.
  if (await repository.findKey(db, scope).then((row) => row !== undefined && row.expires_at > new Date())) return replayFirst()
  const guard = {
    claim: async (tx: Tx) => {
      if (!(await repository.claimKey(tx, scope, fingerprint_, times()))) throw new KeyAlreadyCommitted()
    },
    complete: (tx: Tx, answerStatus: number, body: unknown) =>
      repository.completeKey(tx, scope, { status: answerStatus, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(body) }),
    // The refusal stored under the key is the request's bookkeeping, not a client's write: no audit row.
    replace: (answerStatus: number, body: unknown) =>
      withoutAudit(() => repository.replaceAnswer(db, scope, { status: answerStatus, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(body) })),
  }
  try {
    const result = await work(guard)
    return reply.status(status).send(result)
  } catch (error) {
    if (error instanceof KeyAlreadyCommitted) return replayFirst()
    const refusal = toApiError(error, 0)
    if (refusal.status >= 400 && refusal.status < 500 && refusal.code !== 'idempotency_key_reused') {
      await repository.recordAnswer(db, scope, fingerprint_, times(), { status: refusal.status, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(refusal.toBody()) })
    }
    throw error
  }
}
