import type { Executor, IdempotencyKeyRow } from '../db/schema.ts'

export interface IdempotencyScope {
  organizationId: string
  clientId: string
  key: string
}

const scoped = (scope: IdempotencyScope) => ({ organization_id: scope.organizationId, client_id: scope.clientId, key: scope.key })

/**
 * Claims the key for a request: a new key, an expired one, or one whose first request was abandoned
 * (still running past its lease) by a request with the same body. False when someone else holds it.
 */
export async function claimKey(
  db: Executor,
  scope: IdempotencyScope,
  request: { operation: string; requestHash: string },
  times: { now: Date; lockedUntil: Date; expiresAt: Date },
): Promise<boolean> {
  const claimed = await db
    .insertInto('idempotency_keys')
    .values({
      ...scoped(scope),
      operation: request.operation,
      request_hash: request.requestHash,
      status: 'running',
      created_at: times.now,
      locked_until: times.lockedUntil,
      expires_at: times.expiresAt,
    })
    .onConflict((oc) =>
      oc
        .columns(['organization_id', 'client_id', 'key'])
        .doUpdateSet({
          operation: (eb) => eb.ref('excluded.operation'),
          request_hash: (eb) => eb.ref('excluded.request_hash'),
          status: 'running',
          response_status: null,
          response_headers: null,
          response_body: null,
          created_at: (eb) => eb.ref('excluded.created_at'),
          locked_until: (eb) => eb.ref('excluded.locked_until'),
          expires_at: (eb) => eb.ref('excluded.expires_at'),
        })
        .where((eb) =>
          eb.or([
            eb('idempotency_keys.expires_at', '<=', times.now),
            eb.and([
              eb('idempotency_keys.status', '=', 'running'),
              eb('idempotency_keys.locked_until', '<=', times.now),
              eb('idempotency_keys.request_hash', '=', eb.ref('excluded.request_hash')),
            ]),
          ]),
        ),
    )
    .returning('key')
    .executeTakeFirst()
  return claimed !== undefined
}

export async function findKey(db: Executor, scope: IdempotencyScope): Promise<IdempotencyKeyRow | undefined> {
  return db.selectFrom('idempotency_keys').selectAll().where((eb) => eb.and(scoped(scope))).executeTakeFirst()
}

export async function completeKey(db: Executor, scope: IdempotencyScope, response: { status: number; headers: Record<string, string>; body: string }): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ status: 'completed', response_status: response.status, response_headers: JSON.stringify(response.headers), response_body: response.body })
    .where((eb) => eb.and(scoped(scope)))
    .where('status', '=', 'running')
    .execute()
}

/** Replaces the answer a completed key replays (the request completed it after its commit). */
export async function replaceAnswer(db: Executor, scope: IdempotencyScope, response: { status: number; headers: Record<string, string>; body: string }): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ response_status: response.status, response_headers: JSON.stringify(response.headers), response_body: response.body })
    .where((eb) => eb.and(scoped(scope)))
    .where('status', '=', 'completed')
    .execute()
}

export async function releaseKey(db: Executor, scope: IdempotencyScope): Promise<void> {
  await db.deleteFrom('idempotency_keys').where((eb) => eb.and(scoped(scope))).where('status', '=', 'running').execute()
}

export async function purgeExpiredKeys(db: Executor, now: Date): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst()
  return Number(result.numDeletedRows)
}


/** Stores a finished answer under a key nobody holds (a refusal after its rollback); a key already taken keeps its own. */
export async function recordAnswer(
  db: Executor,
  scope: IdempotencyScope,
  request: { operation: string; requestHash: string },
  times: { now: Date; expiresAt: Date },
  response: { status: number; headers: Record<string, string>; body: string },
): Promise<void> {
  await db
    .insertInto('idempotency_keys')
    .values({
      ...scoped(scope),
      operation: request.operation,
      request_hash: request.requestHash,
      status: 'completed',
      response_status: response.status,
      response_headers: JSON.stringify(response.headers),
      response_body: response.body,
      created_at: times.now,
      locked_until: times.now,
      expires_at: times.expiresAt,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'client_id', 'key']).doNothing())
    .execute()
}
