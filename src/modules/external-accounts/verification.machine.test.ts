import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  isFinal,
  isVerificationLevel,
  nextVerificationStatus,
  REQUEST_TYPES,
  requestStatus,
  VERIFICATION_LEVELS,
  type VerificationEvent,
  type VerificationStatus,
} from './verification.machine.ts'

const STATES: (VerificationStatus | null)[] = [null, 'pending', 'completed']
const EVENTS: VerificationEvent[] = ['start', 'prove']

describe('external account verification state machine', () => {
  test('exactly the listed moves are allowed', () => {
    const seen: string[] = []
    for (const from of STATES) {
      for (const event of EVENTS) {
        const to = nextVerificationStatus(from, event)
        if (to !== null) seen.push(`${from ?? 'none'} ${event} ${to}`)
      }
    }
    assert.deepEqual(seen.sort(), ['none start pending', 'pending prove completed'])
  })

  test('a completed verification is final: no move at all, not even a second start', () => {
    assert.equal(isFinal('completed'), true)
    assert.equal(isFinal('pending'), false)
    for (const event of EVENTS) assert.equal(nextVerificationStatus('completed', event), null)
  })

  test('a level is started once: starting a pending one is no move', () => {
    assert.equal(nextVerificationStatus('pending', 'start'), null)
  })

  test('nothing is proved before it is started', () => {
    assert.equal(nextVerificationStatus(null, 'prove'), null)
  })

  test('each level has its request-for-information type, and the request is ok exactly when the verification is completed', () => {
    assert.deepEqual(REQUEST_TYPES, { declared: 'crypto-address-travel-rule', verified: 'crypto-address-verification' })
    assert.equal(requestStatus('completed'), 'ok')
    assert.equal(requestStatus('pending'), 'pending')
  })

  test('levels: declared and verified, nothing else', () => {
    assert.deepEqual([...VERIFICATION_LEVELS], ['declared', 'verified'])
    for (const level of VERIFICATION_LEVELS) assert.equal(isVerificationLevel(level), true)
    for (const other of ['Declared', 'verify', '', 'completed']) assert.equal(isVerificationLevel(other), false)
  })
})
