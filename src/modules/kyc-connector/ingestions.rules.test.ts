import assert from 'node:assert/strict'
import { test } from 'node:test'
import { allSettled, ordered, resolveVeriffSessions, sessionFor } from './ingestions.rules.ts'

const integrations = new Map<string, string[]>([
  ['all', ['profile', 'address', 'identity', 'proof-of-address']],
  ['identity', ['identity']],
])
const A = '550e8400-e29b-41d4-a716-446655440000'
const B = '661f9511-f30c-52e5-b827-557766551111'

test('processes are listed in the API order, once each', () => {
  assert.deepEqual(ordered(['proof-of-address', 'profile', 'identity', 'profile']), ['profile', 'identity', 'proof-of-address'])
})

test('a session without processes provides its integration\'s among those requested; none requested means all provided', () => {
  const some = resolveVeriffSessions(['identity'], [{ sessionId: A, integrationName: 'all' }], integrations)
  assert.deepEqual(some, { ok: true, processes: ['identity'], sessions: [{ processes: ['identity'], sessionId: A, integrationName: 'all' }] })
  const every = resolveVeriffSessions(undefined, [{ sessionId: A.toUpperCase(), integrationName: 'identity' }, { processes: ['address'], sessionId: B, integrationName: 'all' }], integrations)
  assert.ok(every.ok)
  assert.deepEqual(every.processes, ['address', 'identity'])
  assert.equal(every.sessions[0]!.sessionId, A, 'session ids are kept in lower case')
  assert.equal(sessionFor(every.sessions, 'address').sessionId, B)
})

test('each refusal has its reason', () => {
  const reason = (requested: Parameters<typeof resolveVeriffSessions>[0], sessions: Parameters<typeof resolveVeriffSessions>[1]) => {
    const resolution = resolveVeriffSessions(requested, sessions, integrations)
    return resolution.ok ? 'ok' : resolution.reason
  }
  assert.equal(reason(undefined, [{ sessionId: A, integrationName: 'all' }, { sessionId: A.toUpperCase(), integrationName: 'identity' }]), 'duplicate-session')
  assert.equal(reason(undefined, [{ sessionId: A, integrationName: 'unknown' }]), 'ingestion-not-supported-by-provider-config')
  assert.equal(reason(undefined, [{ processes: ['identity', 'address'], sessionId: A, integrationName: 'identity' }]), 'ingestion-not-supported-by-provider-config')
  assert.equal(reason(['profile', 'identity'], [{ sessionId: A, integrationName: 'identity' }]), 'ingestion-process-not-resolvable')
  assert.equal(reason(['profile'], [{ processes: ['identity'], sessionId: A, integrationName: 'all' }]), 'ingestion-process-not-resolvable')
  const message = resolveVeriffSessions(undefined, [{ processes: ['proof-of-address'], sessionId: A, integrationName: 'identity' }], integrations)
  assert.ok(!message.ok && message.message.endsWith(': "proof-of-address"'))
})

test('an ingestion is settled when every process is completed or failed', () => {
  assert.equal(allSettled({ profile: { status: 'completed' }, identity: { status: 'failed' } }, ['profile', 'identity']), true)
  assert.equal(allSettled({ profile: { status: 'completed' }, identity: { status: 'processing' } }, ['profile', 'identity']), false)
  assert.equal(allSettled({ profile: { status: 'completed' } }, ['profile', 'proof-of-address']), false)
})
