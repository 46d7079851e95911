import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  initialStatus,
  KYC_PROCESS_CODES,
  KYC_STATUSES,
  PROCESS_KINDS,
  summarize,
  transition,
  type KycEvent,
  type KycProcessCode,
  type KycStatus,
} from './kyc.machine.ts'

const ok = (status: KycStatus) => ({ allowed: true, status })
const refused = (reason: string) => ({ allowed: false, reason })

const EVENTS: KycEvent[] = [
  { type: 'declare', complete: true },
  { type: 'declare', complete: false },
  { type: 'register' },
  { type: 'verify', registered: true },
  { type: 'verify', registered: false },
  { type: 'attest', approved: true },
  { type: 'attest', approved: false },
  { type: 'attest', approved: true, attemptsLeft: false },
  { type: 'submit' },
  { type: 'attach' },
  { type: 'conclude', approved: true },
  { type: 'conclude', approved: false },
  { type: 'abort' },
  { type: 'answer', attemptsLeft: true },
  { type: 'answer', attemptsLeft: false },
  { type: 'review', approved: true },
  { type: 'review', approved: false },
  { type: 'review', approved: false, retry: true },
  { type: 'attest', approved: false, retry: true },
  { type: 'derive' },
  { type: 'expire' },
]

/**
 * The whole table: for each kind, status and event, the expected outcome. Anything not listed is refused
 * with `kyc-process-update-not-allowed` (or the kind's own reason, given by `refusal`).
 */
const ALLOWED: Record<string, Record<string, KycStatus>> = {
  declared: {
    'pending declare:true': 'ok',
    'pending declare:false': 'pending',
    'ok declare:true': 'ok',
    'ok declare:false': 'pending',
  },
  contact: {
    'pending register': 'pending',
    'pending attest:true': 'ok',
    'pending attest:false': 'ok',
    'pending attest:true:false': 'ok',
    'pending attest:false:retry': 'ok',
    'pending verify:true': 'ok',
  },
  document: {
    'pending submit': 'running',
    'failed submit': 'running',
    'pending attach': 'pending',
    'failed attach': 'pending',
    'pending attest:true': 'ok',
    'failed attest:true': 'ok',
    'pending attest:false': 'failed',
    'failed attest:false': 'failed',
    'pending attest:true:false': 'ok',
    'failed attest:true:false': 'ok',
    'pending attest:false:retry': 'failed',
    'failed attest:false:retry': 'failed',
    'pending derive': 'ok',
    'failed derive': 'ok',
    'running conclude:true': 'ok',
    'running conclude:false': 'failed',
    'running abort': 'pending',
  },
  form: {
    'pending answer:true': 'pending',
    'pending answer:false': 'pending',
    'failed answer:true': 'pending',
    'pending attest:true': 'ok',
    'pending attest:false': 'failed',
    'failed attest:true': 'ok',
    'failed attest:false': 'failed',
    'pending attest:true:false': 'ok',
    'pending review:true': 'ok',
    'pending review:false': 'failed',
    // Rejected while attempts remain: answered again.
    'pending review:false:retry': 'pending',
    'pending attest:false:retry': 'pending',
    'failed attest:false:retry': 'pending',
    // Only a completed form expires; it is then answered again.
    'ok expire': 'pending',
  },
  automatic: {
    'pending conclude:true': 'ok',
    'pending conclude:false': 'failed',
  },
}

function label(status: KycStatus, event: KycEvent): string {
  switch (event.type) {
    case 'declare':
      return `${status} declare:${event.complete}`
    case 'verify':
      return `${status} verify:${event.registered}`
    case 'attest':
      return `${status} attest:${event.approved}${event.attemptsLeft === undefined ? '' : `:${event.attemptsLeft}`}${event.retry ? ':retry' : ''}`
    case 'review':
      return `${status} review:${event.approved}${event.retry ? ':retry' : ''}`
    case 'conclude':
      return `${status} ${event.type}:${event.approved}`
    case 'answer':
      return `${status} answer:${event.attemptsLeft}`
    default:
      return `${status} ${event.type}`
  }
}

function expectedRefusal(code: KycProcessCode, status: KycStatus): string {
  if (status === 'exempt') return 'kyc-process-status-exempt'
  const kind = PROCESS_KINDS[code]
  if (kind === 'contact' && status === 'ok') return `${code}-already-verified`
  if (kind === 'form' && status === 'ok') return 'form-already-completed'
  return 'kyc-process-update-not-allowed'
}

describe('KYC process state machine', () => {
  test('every process, status and event: the expected move or the expected refusal', () => {
    let moves = 0
    let refusals = 0
    for (const code of KYC_PROCESS_CODES) {
      for (const status of KYC_STATUSES) {
        for (const event of EVENTS) {
          const expected = status === 'exempt' ? undefined : ALLOWED[PROCESS_KINDS[code]]![label(status, event)]
          const actual = transition(code, status, event)
          if (expected) {
            moves++
            assert.deepEqual(actual, ok(expected), `${code}: ${label(status, event)}`)
          } else {
            refusals++
            assert.deepEqual(actual, refused(expectedRefusal(code, status)), `${code}: ${label(status, event)}`)
          }
        }
      }
    }
    assert.ok(moves > 40 && refusals > 800)
  })

  test('phone follows the specification: register → pending, attest → ok, later verification → ok', () => {
    assert.deepEqual(transition('phone', 'pending', { type: 'register' }), ok('pending'))
    assert.deepEqual(transition('phone', 'pending', { type: 'attest', approved: true }), ok('ok'))
    assert.deepEqual(transition('phone', 'pending', { type: 'verify', registered: true }), ok('ok'))
    assert.deepEqual(transition('phone', 'pending', { type: 'verify', registered: false }), refused('kyc-process-update-not-allowed'))
    assert.deepEqual(transition('phone', 'ok', { type: 'register' }), refused('phone-already-verified'))
    assert.deepEqual(transition('email', 'ok', { type: 'verify', registered: true }), refused('email-already-verified'))
  })

  test('a rejected form may be answered again only while attempts remain; a completed one never', () => {
    assert.deepEqual(transition('self-categorization-statement', 'failed', { type: 'answer', attemptsLeft: true }), ok('pending'))
    assert.deepEqual(transition('self-categorization-statement', 'failed', { type: 'answer', attemptsLeft: false }), refused('kyc-process-update-not-allowed'))
    assert.deepEqual(transition('self-categorization-statement', 'failed', { type: 'attest', approved: true, attemptsLeft: false }), refused('kyc-process-update-not-allowed'))
    assert.deepEqual(transition('self-categorization-statement', 'ok', { type: 'answer', attemptsLeft: true }), refused('form-already-completed'))
  })

  test('applicability: pending and exempt switch; a process under way or done keeps its status', () => {
    for (const code of KYC_PROCESS_CODES) {
      assert.deepEqual(transition(code, 'pending', { type: 'applicability', applies: false }), ok('exempt'))
      assert.deepEqual(transition(code, 'exempt', { type: 'applicability', applies: true }), ok('pending'))
      assert.deepEqual(transition(code, 'exempt', { type: 'applicability', applies: false }), ok('exempt'))
      assert.deepEqual(transition(code, 'pending', { type: 'applicability', applies: true }), ok('pending'))
      for (const status of ['ok', 'failed', 'running'] as const) {
        assert.deepEqual(transition(code, status, { type: 'applicability', applies: false }), ok(status))
        assert.deepEqual(transition(code, status, { type: 'applicability', applies: true }), ok(status))
      }
    }
  })
})

describe('KYC initial statuses', () => {
  const complete = { profileComplete: true, addressComplete: true, residenceCountry: 'GB' }
  test('declared data decides profile and address; self-categorization applies to residents of GB only', () => {
    assert.equal(initialStatus('profile', complete), 'ok')
    assert.equal(initialStatus('profile', { ...complete, profileComplete: false }), 'pending')
    assert.equal(initialStatus('address', complete), 'ok')
    assert.equal(initialStatus('address', { ...complete, addressComplete: false }), 'pending')
    assert.equal(initialStatus('self-categorization-statement', complete), 'pending')
    assert.equal(initialStatus('self-categorization-statement', { ...complete, residenceCountry: 'FR' }), 'exempt')
    assert.equal(initialStatus('enhanced-due-diligence', complete), 'exempt')
    for (const code of ['email', 'phone', 'identity', 'proof-of-address', 'customer-due-diligence', 'crypto-risk-assessment', 'tax-details', 'screening', 'risk'] as const) {
      assert.equal(initialStatus(code, complete), 'pending', code)
    }
  })
})

describe('KYC summary', () => {
  const all = (status: KycStatus) => Object.fromEntries(KYC_PROCESS_CODES.map((c) => [c, status])) as Record<KycProcessCode, KycStatus>
  const none = { residenceRestricted: false, finalFailures: [] }

  test('ok when every process is ok or exempt, pending otherwise', () => {
    assert.deepEqual(summarize(all('ok'), none), { status: 'ok', reason: 'none' })
    assert.deepEqual(summarize({ ...all('ok'), 'self-categorization-statement': 'exempt' }, none), { status: 'ok', reason: 'none' })
    assert.deepEqual(summarize({ ...all('ok'), phone: 'pending' }, none), { status: 'pending', reason: 'none' })
    assert.deepEqual(summarize({ ...all('ok'), identity: 'running' }, none), { status: 'pending', reason: 'none' })
    assert.deepEqual(summarize({ ...all('ok'), identity: 'failed' }, none), { status: 'pending', reason: 'none' })
  })

  test('blocked by a rejected screening or risk, or a failure that cannot be retried', () => {
    assert.deepEqual(summarize({ ...all('ok'), screening: 'failed' }, none), { status: 'blocked', reason: 'screening-rejected' })
    assert.deepEqual(summarize({ ...all('pending'), risk: 'failed' }, none), { status: 'blocked', reason: 'risk-rejected' })
    const exhausted = { residenceRestricted: false, finalFailures: ['self-categorization-statement' as const] }
    assert.deepEqual(summarize({ ...all('ok'), 'self-categorization-statement': 'failed' }, exhausted), { status: 'blocked', reason: 'self-categorization-statement-failed' })
    assert.deepEqual(summarize(all('ok'), exhausted), { status: 'ok', reason: 'none' })
  })

  test('restricted where residents may not be served, unless blocked', () => {
    const restricted = { residenceRestricted: true, finalFailures: [] }
    assert.deepEqual(summarize(all('ok'), restricted), { status: 'restricted', reason: 'residence-country-restricted' })
    assert.deepEqual(summarize({ ...all('ok'), screening: 'failed' }, restricted), { status: 'blocked', reason: 'screening-rejected' })
  })
})
