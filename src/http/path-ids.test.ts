import assert from 'node:assert/strict'
import { test } from 'node:test'
import Type from 'typebox'
import { DomainError } from '../lib/errors.ts'
import { UUID_PATTERN } from '../lib/ids.ts'
import { parsePathIds, pathIdsOf } from './path-ids.ts'

const ID = '0190A8C1-0000-7000-8000-00000000000A'

test('the ids of a params schema: a UUID by format or pattern, alone or with literal aliases', () => {
  const schema = Type.Object({
    accountId: Type.String({ format: 'uuid' }),
    ingestionId: Type.String({ pattern: UUID_PATTERN }),
    entityId: Type.Union([Type.String({ format: 'uuid' }), Type.Literal('me')]),
    entity: Type.String(),
    asset: Type.String({ minLength: 1 }),
    either: Type.Union([Type.String({ format: 'uuid' }), Type.Number()]),
  })
  assert.deepEqual(
    pathIdsOf(schema).map((id) => [id.name, [...id.aliases]]),
    [['accountId', []], ['ingestionId', []], ['entityId', ['me']]],
  )
  assert.deepEqual(pathIdsOf(undefined), [])
})

test('a malformed id is entity_not_found naming the entity as an unknown id does', () => {
  const ids = pathIdsOf(
    Type.Object({
      externalAccountId: Type.String({ format: 'uuid' }),
      requestForInformationId: Type.String({ format: 'uuid' }),
      endpointId: Type.String({ format: 'uuid', 'x-entity': 'webhook-endpoint' }),
    }),
  )
  const valid = { externalAccountId: ID, requestForInformationId: ID, endpointId: ID }
  for (const [name, entity] of [['externalAccountId', 'external-account'], ['requestForInformationId', 'request-for-information'], ['endpointId', 'webhook-endpoint']] as const) {
    for (const malformed of ['not-a-uuid', `urn:uuid:${ID}`, `{${ID}}`, ID.replaceAll('-', ''), `${ID} `, '\u0000', '']) {
      const error = parsePathIds(ids, { ...valid, [name]: malformed })
      assert.ok(error instanceof DomainError, `${name}: ${malformed}`)
      assert.equal(error.code, 'entity_not_found')
      assert.deepEqual(error.details, { entity })
    }
  }
})

test('the metadata id names the singular of its entity parameter, and `me` stays', () => {
  const ids = pathIdsOf(Type.Object({ entity: Type.String(), entityId: Type.Union([Type.String({ format: 'uuid' }), Type.Literal('me')]) }))
  assert.deepEqual(parsePathIds(ids, { entity: 'external-accounts', entityId: 'nope' })?.details, { entity: 'external-account' })
  const params = { entity: 'users', entityId: 'me' }
  assert.equal(parsePathIds(ids, params), undefined)
  assert.equal(params.entityId, 'me')
})

test('a valid id is parsed to its canonical lower-case form in place', () => {
  const params: Record<string, unknown> = { accountId: ID }
  assert.equal(parsePathIds(pathIdsOf(Type.Object({ accountId: Type.String({ format: 'uuid' }) })), params), undefined)
  assert.equal(params.accountId, ID.toLowerCase())
})
