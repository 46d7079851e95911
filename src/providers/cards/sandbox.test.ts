import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, beforeEach, describe, test } from 'node:test'
import { ENGINES, openTestDatabase, testConfig } from '../../../test/helpers.ts'
import type { DatabaseHandle } from '../../db/database.ts'
import type { CardPaymentRequest } from './card-processor.ts'
import {
  DEFAULT_CHALLENGE_TTL_MS,
  SANDBOX_CAPTURE_DECLINE_CARD,
  SANDBOX_CHALLENGE_CARD,
  SANDBOX_PAYMENT_BOUNDS,
  SANDBOX_PAYMENT_DECLINES,
  SANDBOX_VERIFICATION_DECLINES,
  SANDBOX_WRONG_SECURITY_CODE,
  SandboxCardProcessor,
  sandboxPaymentOutcome,
  type AuthorizationChange,
} from './sandbox.ts'

const APPROVED_CARD = '4242424242424242'
const NOW = new Date('2030-06-15T12:00:00.000Z')
const VALID_EXPIRY = { month: 12, year: 2032 }

const outcomeOf = (number: string, amount = '10', expiryDate = VALID_EXPIRY, now = NOW) =>
  sandboxPaymentOutcome({ card: { number, expiryDate, network: 'visa' }, amount }, now)

describe('sandboxPaymentOutcome', () => {
  test('an amount outside the bounds is refused first, whatever the card', () => {
    assert.equal(outcomeOf(APPROVED_CARD, '0.99'), 'amount-limit-exceed')
    assert.equal(outcomeOf(APPROVED_CARD, '0.01'), 'amount-limit-exceed')
    assert.equal(outcomeOf(APPROVED_CARD, '10000.01'), 'provider-maximum-limit-exceeded')
    assert.equal(outcomeOf(APPROVED_CARD, '1000000'), 'provider-maximum-limit-exceeded')
    // Before the expiry, the test numbers and the challenge.
    assert.equal(outcomeOf(SANDBOX_CHALLENGE_CARD, '0.5'), 'amount-limit-exceed')
    assert.equal(outcomeOf('4000000000000259', '20000'), 'provider-maximum-limit-exceeded')
    assert.equal(outcomeOf(APPROVED_CARD, '0.5', { month: 1, year: 2020 }), 'amount-limit-exceed')
  })

  test('the bounds themselves are inside', () => {
    assert.equal(outcomeOf(APPROVED_CARD, SANDBOX_PAYMENT_BOUNDS.minimum), 'approve')
    assert.equal(outcomeOf(APPROVED_CARD, '1'), 'approve')
    assert.equal(outcomeOf(APPROVED_CARD, SANDBOX_PAYMENT_BOUNDS.maximum), 'approve')
    assert.equal(outcomeOf(APPROVED_CARD, '10000.00000001'), 'provider-maximum-limit-exceeded')
    assert.equal(outcomeOf(APPROVED_CARD, '0.99999999'), 'amount-limit-exceed')
  })

  test('a card is valid through the last day of its expiry month (UTC), then card-expired', () => {
    assert.equal(outcomeOf(APPROVED_CARD, '10', { month: 6, year: 2030 }), 'approve', 'the expiry month itself')
    assert.equal(outcomeOf(APPROVED_CARD, '10', { month: 5, year: 2030 }), 'card-expired')
    assert.equal(outcomeOf(APPROVED_CARD, '10', { month: 12, year: 2029 }), 'card-expired')
    assert.equal(outcomeOf(APPROVED_CARD, '10', { month: 1, year: 2031 }), 'approve')
    const lastMoment = new Date('2030-06-30T23:59:59.999Z')
    const nextMonth = new Date('2030-07-01T00:00:00.000Z')
    assert.equal(outcomeOf(APPROVED_CARD, '10', { month: 6, year: 2030 }, lastMoment), 'approve')
    assert.equal(outcomeOf(APPROVED_CARD, '10', { month: 6, year: 2030 }, nextMonth), 'card-expired')
    // Expiry comes before the card's own outcome.
    assert.equal(outcomeOf(SANDBOX_CHALLENGE_CARD, '10', { month: 5, year: 2030 }), 'card-expired')
    assert.equal(outcomeOf('4000000000000259', '10', { month: 5, year: 2030 }), 'card-expired')
  })

  test('each payment test number selects its decline', () => {
    assert.equal(Object.keys(SANDBOX_PAYMENT_DECLINES).length, 8)
    for (const [number, reason] of Object.entries(SANDBOX_PAYMENT_DECLINES)) assert.equal(outcomeOf(number), reason, number)
  })

  test('a card the issuer refuses at linking is declined the same way, were it stored anyway', () => {
    for (const [number, reason] of Object.entries(SANDBOX_VERIFICATION_DECLINES)) assert.equal(outcomeOf(number), reason, number)
  })

  test('the challenge card asks for a challenge; the capture-decline card authorizes; any other card is approved', () => {
    assert.equal(outcomeOf(SANDBOX_CHALLENGE_CARD), 'challenge')
    assert.equal(outcomeOf(SANDBOX_CAPTURE_DECLINE_CARD), 'capture-decline')
    assert.equal(outcomeOf(APPROVED_CARD), 'approve')
    assert.equal(outcomeOf('5200828282828210'), 'approve')
  })

  test('the test numbers of payments are apart from those of verification, so that their cards can be linked', () => {
    for (const number of [...Object.keys(SANDBOX_PAYMENT_DECLINES), SANDBOX_CHALLENGE_CARD, SANDBOX_CAPTURE_DECLINE_CARD]) {
      assert.equal(SANDBOX_VERIFICATION_DECLINES[number], undefined, number)
    }
  })
})

for (const engine of ENGINES) {
  describe(`SandboxCardProcessor [${engine}]`, () => {
    let database: DatabaseHandle
    let cleanup: () => Promise<void>
    /** The processor's clock: tests move it. */
    let clock: Date
    let processor: SandboxCardProcessor
    let changes: AuthorizationChange[]
    const TTL_MS = 60_000
    const PUBLIC_URL = 'https://sandbox.tessera.test/'
    const org = randomUUID()

    before(async () => {
      ;({ database, cleanup } = await openTestDatabase(engine, testConfig()))
    })
    after(async () => {
      await database?.close()
      await cleanup?.()
    })
    beforeEach(() => {
      clock = new Date(NOW)
      processor = new SandboxCardProcessor({ db: database.db, publicUrl: PUBLIC_URL, challengeTtlMs: TTL_MS, now: () => clock })
      changes = []
      processor.onChange((change) => changes.push(change))
    })

    const payment = (number: string, overrides: Partial<CardPaymentRequest> = {}): CardPaymentRequest => {
      const reference = randomUUID()
      return {
        key: `${reference}:authorize`,
        organizationId: org,
        reference,
        card: { number, expiryDate: VALID_EXPIRY, network: 'visa' },
        amount: '100',
        asset: 'EUR',
        returnUrl: 'https://shop.example/back',
        ...overrides,
      }
    }
    const rowOf = async (id: string) => (await processor.payments(org)).find((row) => row.id === id)

    test('verify: the verification test numbers and the wrong security code are declined, other cards approved', async () => {
      for (const [number, reason] of Object.entries(SANDBOX_VERIFICATION_DECLINES)) {
        assert.deepEqual(await processor.verify({ number, securityCode: '123', expiryDate: VALID_EXPIRY }), { status: 'declined', reason })
      }
      assert.deepEqual(await processor.verify({ number: APPROVED_CARD, securityCode: SANDBOX_WRONG_SECURITY_CODE, expiryDate: VALID_EXPIRY }), { status: 'declined', reason: 'card-unauthorized' })
      for (const number of [APPROVED_CARD, SANDBOX_CHALLENGE_CARD, SANDBOX_CAPTURE_DECLINE_CARD, ...Object.keys(SANDBOX_PAYMENT_DECLINES)]) {
        assert.deepEqual(await processor.verify({ number, securityCode: '123', expiryDate: VALID_EXPIRY }), { status: 'approved' }, number)
      }
    })

    test('authorize is idempotent by key: the same key is the same payment, whatever the repeated request says', async () => {
      const request = payment(APPROVED_CARD)
      const first = await processor.authorize(request)
      assert.equal(first.status, 'authorized')
      const again = await processor.authorize(request)
      assert.deepEqual(again, first)
      // A repeat that differs (a bug in the caller) still answers the payment the key holds.
      const differing = await processor.authorize({ ...request, amount: '200', card: { ...request.card, number: SANDBOX_CHALLENGE_CARD } })
      assert.deepEqual(differing, first)
      const rows = (await processor.payments(org)).filter((row) => row.reference === request.reference)
      assert.equal(rows.length, 1)
      assert.equal(rows[0]!.amount, '100')
      assert.equal(rows[0]!.last_four, '4242')
      assert.equal(rows[0]!.status, 'authorized')
      assert.ok(!JSON.stringify(rows[0]).includes(APPROVED_CARD), 'the number is not kept')

      // Another key is another payment; the same key in another organization too.
      const other = await processor.authorize({ ...request, key: `${request.key}-2` })
      assert.notEqual(other.authorizationId, first.authorizationId)
      const elsewhere = await processor.authorize({ ...request, organizationId: randomUUID() })
      assert.notEqual(elsewhere.authorizationId, first.authorizationId)
    })

    test('authorize records a decline with its reason, and bounds before the card', async () => {
      const declined = await processor.authorize(payment('4000000000000259'))
      assert.equal(declined.status, 'declined')
      assert.equal((declined as { reason: string }).reason, 'insufficient-funds')
      assert.ok(declined.authorizationId)
      assert.equal((await rowOf(declined.authorizationId!))?.reason, 'insufficient-funds')

      const small = await processor.authorize(payment(SANDBOX_CHALLENGE_CARD, { amount: '0.99' }))
      assert.deepEqual({ status: small.status, reason: (small as { reason: string }).reason }, { status: 'declined', reason: 'amount-limit-exceed' })
      const expired = await processor.authorize(payment(APPROVED_CARD, { card: { number: APPROVED_CARD, expiryDate: { month: 5, year: 2030 }, network: 'visa' } }))
      assert.equal((expired as { reason: string }).reason, 'card-expired')
      // The processor's clock decides expiry.
      clock = new Date('2033-01-01T00:00:00Z')
      const later = await processor.authorize(payment(APPROVED_CARD))
      assert.equal((later as { reason: string }).reason, 'card-expired')
    })

    test('a challenge: its page and expiry; pass authorizes it, and whoever waits is told', async () => {
      const request = payment(SANDBOX_CHALLENGE_CARD)
      const challenge = await processor.authorize(request)
      assert.equal(challenge.status, 'challenge')
      const { challengeUrl, expiresAt, authorizationId } = challenge as { challengeUrl: string; expiresAt: Date; authorizationId: string }
      assert.equal(challengeUrl, `https://sandbox.tessera.test/sandbox/3ds/${authorizationId}`)
      assert.equal(expiresAt.getTime(), NOW.getTime() + TTL_MS)
      assert.equal((await processor.authorizations(org, [authorizationId])).get(authorizationId)?.status, 'challenge')
      assert.equal((await processor.challenge(authorizationId))?.status, 'challenge')

      // Not capturable before it is answered.
      assert.deepEqual(await processor.capture({ organizationId: org, authorizationId, key: 'early' }), { status: 'declined', reason: 'unspecified-error' })

      clock = new Date(NOW.getTime() + TTL_MS - 1)
      const answered = await processor.answerChallenge(authorizationId, 'pass')
      assert.equal(answered?.status, 'authorized')
      assert.deepEqual(changes, [{ organizationId: org, reference: request.reference }])
      assert.deepEqual((await processor.authorizations(org, [authorizationId])).get(authorizationId), { status: 'authorized', authorizationId })
      assert.equal((await processor.capture({ organizationId: org, authorizationId, key: 'capture' })).status, 'captured')
    })

    test('a challenge failed is a decline (card-unauthorized); a second answer changes nothing and tells no one', async () => {
      const request = payment(SANDBOX_CHALLENGE_CARD)
      const { authorizationId } = await processor.authorize(request)
      const failed = await processor.answerChallenge(authorizationId!, 'fail')
      assert.equal(failed?.status, 'declined')
      assert.equal(failed?.reason, 'card-unauthorized')
      assert.deepEqual((await processor.authorizations(org, [authorizationId!])).get(authorizationId!), { status: 'declined', authorizationId, reason: 'card-unauthorized' })
      assert.equal(changes.length, 1)

      const second = await processor.answerChallenge(authorizationId!, 'pass')
      assert.equal(second?.status, 'declined')
      assert.equal(changes.length, 1, 'nothing changed')
      assert.deepEqual(await processor.capture({ organizationId: org, authorizationId: authorizationId!, key: 'capture' }), { status: 'declined', reason: 'card-unauthorized' })

      // The same, the other way round: passed, then failed.
      const { authorizationId: passedId } = await processor.authorize(payment(SANDBOX_CHALLENGE_CARD))
      await processor.answerChallenge(passedId!, 'pass')
      assert.equal((await processor.answerChallenge(passedId!, 'fail'))?.status, 'authorized')
      assert.equal(changes.length, 2)
      assert.equal(await processor.answerChallenge(randomUUID(), 'pass'), null, 'an unknown challenge')
    })

    test('a challenge nobody answers expires at its time: a decline (card-unauthorized), and a late answer changes nothing', async () => {
      const { authorizationId } = await processor.authorize(payment(SANDBOX_CHALLENGE_CARD))
      clock = new Date(NOW.getTime() + TTL_MS - 1)
      assert.equal((await processor.authorizations(org, [authorizationId!])).get(authorizationId!)?.status, 'challenge', 'not yet')
      clock = new Date(NOW.getTime() + TTL_MS)
      assert.deepEqual((await processor.authorizations(org, [authorizationId!])).get(authorizationId!), { status: 'declined', authorizationId, reason: 'card-unauthorized' })
      assert.equal((await rowOf(authorizationId!))?.status, 'declined', 'recorded')
      assert.equal((await processor.answerChallenge(authorizationId!, 'pass'))?.status, 'declined')
      assert.equal(changes.length, 0)

      // Answered after its time but before anyone looked: declined, and whoever waits is told.
      const { authorizationId: lateId } = await processor.authorize(payment(SANDBOX_CHALLENGE_CARD))
      clock = new Date(clock.getTime() + TTL_MS + 1)
      const late = await processor.answerChallenge(lateId!, 'pass')
      assert.equal(late?.status, 'declined')
      assert.equal(late?.reason, 'card-unauthorized')
      assert.equal(changes.length, 1)
      assert.equal((await processor.capture({ organizationId: org, authorizationId: lateId!, key: 'capture' })).status, 'declined')
    })

    test('the default challenge lasts ten minutes', async () => {
      const standard = new SandboxCardProcessor({ db: database.db, publicUrl: PUBLIC_URL, now: () => clock })
      const challenge = await standard.authorize(payment(SANDBOX_CHALLENGE_CARD))
      assert.equal(DEFAULT_CHALLENGE_TTL_MS, 600_000)
      assert.equal((challenge as { expiresAt: Date }).expiresAt.getTime(), NOW.getTime() + DEFAULT_CHALLENGE_TTL_MS)
    })

    test('authorizations leave out unknown ids and other organizations\' payments', async () => {
      const { authorizationId } = await processor.authorize(payment(APPROVED_CARD))
      const foreign = await processor.authorize(payment(APPROVED_CARD, { organizationId: randomUUID() }))
      const states = await processor.authorizations(org, [authorizationId!, foreign.authorizationId!, randomUUID()])
      assert.deepEqual([...states.keys()], [authorizationId])
      assert.equal((await processor.authorizations(org, [])).size, 0)
    })

    test('capture happens once: two keys, one capture id; another organization cannot capture', async () => {
      const { authorizationId } = await processor.authorize(payment(APPROVED_CARD, { amount: '42.5' }))
      assert.deepEqual(await processor.capture({ organizationId: randomUUID(), authorizationId: authorizationId!, key: 'a' }), { status: 'declined', reason: 'unspecified-error' })
      const first = await processor.capture({ organizationId: org, authorizationId: authorizationId!, key: 'a' })
      assert.equal(first.status, 'captured')
      const again = await processor.capture({ organizationId: org, authorizationId: authorizationId!, key: 'a' })
      const otherKey = await processor.capture({ organizationId: org, authorizationId: authorizationId!, key: 'b' })
      assert.deepEqual(again, first)
      assert.deepEqual(otherKey, first)
      const concurrent = await Promise.all(Array.from({ length: 5 }, (_, i) => processor.capture({ organizationId: org, authorizationId: authorizationId!, key: `c${i}` })))
      for (const capture of concurrent) assert.deepEqual(capture, first)
      const row = await rowOf(authorizationId!)
      assert.equal(row?.status, 'captured')
      assert.equal(row?.captured_amount, '42.5')
      assert.deepEqual(row?.operations.map((operation) => [operation.kind, operation.key, operation.id, operation.amount]), [['capture', 'a', (first as { captureId: string }).captureId, '42.5']])
      assert.deepEqual(await processor.capture({ organizationId: org, authorizationId: randomUUID(), key: 'x' }), { status: 'declined', reason: 'unspecified-error' })
    })

    test('concurrent captures of one authorization under different keys capture once', async () => {
      const { authorizationId } = await processor.authorize(payment(APPROVED_CARD))
      const captures = await Promise.all(Array.from({ length: 8 }, (_, i) => processor.capture({ organizationId: org, authorizationId: authorizationId!, key: `k${i}` })))
      assert.equal(new Set(captures.map((capture) => (capture as { captureId?: string }).captureId)).size, 1)
      assert.equal((await rowOf(authorizationId!))?.operations.length, 1)
    })

    test('the capture-decline card authorizes, then its capture is refused (card-declined-by-bank), for good', async () => {
      const authorization = await processor.authorize(payment(SANDBOX_CAPTURE_DECLINE_CARD))
      assert.equal(authorization.status, 'authorized')
      const capture = await processor.capture({ organizationId: org, authorizationId: authorization.authorizationId!, key: 'a' })
      assert.deepEqual(capture, { status: 'declined', reason: 'card-declined-by-bank' })
      assert.deepEqual(await processor.capture({ organizationId: org, authorizationId: authorization.authorizationId!, key: 'b' }), { status: 'declined', reason: 'card-declined-by-bank' })
      const row = await rowOf(authorization.authorizationId!)
      assert.equal(row?.status, 'declined')
      assert.equal(row?.captured_amount, '0')
      assert.deepEqual(row?.operations, [])
    })

    test('void releases an authorization: its capture is then declined; a captured payment is not voided', async () => {
      const { authorizationId } = await processor.authorize(payment(APPROVED_CARD))
      await processor.void({ organizationId: org, authorizationId: authorizationId!, key: 'v' })
      await processor.void({ organizationId: org, authorizationId: authorizationId!, key: 'v' })
      const voided = await rowOf(authorizationId!)
      assert.equal(voided?.status, 'voided')
      assert.deepEqual(voided?.operations.map((operation) => operation.kind), ['void'], 'voided once')
      assert.deepEqual(await processor.capture({ organizationId: org, authorizationId: authorizationId!, key: 'c' }), { status: 'declined', reason: 'unspecified-error' })
      assert.equal((await rowOf(authorizationId!))?.captured_amount, '0')

      // A challenge not answered can be voided too (the deposit ended meanwhile).
      const { authorizationId: challengeId } = await processor.authorize(payment(SANDBOX_CHALLENGE_CARD))
      await processor.void({ organizationId: org, authorizationId: challengeId!, key: 'v' })
      assert.equal((await rowOf(challengeId!))?.status, 'voided')
      assert.equal((await processor.answerChallenge(challengeId!, 'pass'))?.status, 'voided', 'an answer after the void changes nothing')

      const { authorizationId: capturedId } = await processor.authorize(payment(APPROVED_CARD))
      await processor.capture({ organizationId: org, authorizationId: capturedId!, key: 'c' })
      await processor.void({ organizationId: org, authorizationId: capturedId!, key: 'v' })
      const captured = await rowOf(capturedId!)
      assert.equal(captured?.status, 'captured')
      assert.deepEqual(captured?.operations.map((operation) => operation.kind), ['capture'])
      // Another organization's void does nothing.
      const { authorizationId: keptId } = await processor.authorize(payment(APPROVED_CARD))
      await processor.void({ organizationId: randomUUID(), authorizationId: keptId!, key: 'v' })
      assert.equal((await rowOf(keptId!))?.status, 'authorized')
    })

    test('refunds: in part and whole, once per key; more than was captured is declined', async () => {
      const { authorizationId } = await processor.authorize(payment(APPROVED_CARD, { amount: '100' }))
      const id = authorizationId!
      assert.deepEqual(await processor.refund({ organizationId: org, authorizationId: id, amount: '10', key: 'early' }), { status: 'declined', reason: 'unspecified-error' }, 'nothing captured yet')
      await processor.capture({ organizationId: org, authorizationId: id, key: 'c' })

      const part = await processor.refund({ organizationId: org, authorizationId: id, amount: '30.25', key: 'r1' })
      assert.equal(part.status, 'refunded')
      assert.deepEqual(await processor.refund({ organizationId: org, authorizationId: id, amount: '30.25', key: 'r1' }), part, 'the same key refunds once')
      assert.equal((await rowOf(id))?.refunded_amount, '30.25')

      assert.deepEqual(await processor.refund({ organizationId: org, authorizationId: id, amount: '69.76', key: 'r2' }), { status: 'declined', reason: 'amount-limit-exceed' })
      assert.deepEqual(await processor.refund({ organizationId: org, authorizationId: id, amount: '0', key: 'r3' }), { status: 'declined', reason: 'amount-limit-exceed' })
      assert.deepEqual(await processor.refund({ organizationId: org, authorizationId: id, amount: '-5', key: 'r4' }), { status: 'declined', reason: 'amount-limit-exceed' })
      assert.deepEqual(await processor.refund({ organizationId: randomUUID(), authorizationId: id, amount: '1', key: 'r5' }), { status: 'declined', reason: 'unspecified-error' })

      const rest = await processor.refund({ organizationId: org, authorizationId: id, amount: '69.75', key: 'r6' })
      assert.equal(rest.status, 'refunded')
      assert.notEqual((rest as { refundId: string }).refundId, (part as { refundId: string }).refundId)
      assert.deepEqual(await processor.refund({ organizationId: org, authorizationId: id, amount: '0.01', key: 'r7' }), { status: 'declined', reason: 'amount-limit-exceed' }, 'all was refunded')
      const row = await rowOf(id)
      assert.equal(row?.refunded_amount, '100')
      assert.deepEqual(row?.operations.map((operation) => [operation.kind, operation.key, operation.amount]), [['capture', 'c', '100'], ['refund', 'r1', '30.25'], ['refund', 'r6', '69.75']])

      // A whole refund at once.
      const { authorizationId: wholeId } = await processor.authorize(payment(APPROVED_CARD, { amount: '55' }))
      await processor.capture({ organizationId: org, authorizationId: wholeId!, key: 'c' })
      assert.equal((await processor.refund({ organizationId: org, authorizationId: wholeId!, amount: '55', key: 'all' })).status, 'refunded')
      assert.equal((await rowOf(wholeId!))?.refunded_amount, '55')
      assert.deepEqual(await processor.refund({ organizationId: org, authorizationId: wholeId!, amount: '55.01', key: 'over' }), { status: 'declined', reason: 'amount-limit-exceed' })
    })

    test('payments lists an organization\'s payments only, oldest first', async () => {
      const own = randomUUID()
      const mine = new SandboxCardProcessor({ db: database.db, publicUrl: PUBLIC_URL, now: () => clock })
      const first = await mine.authorize(payment(APPROVED_CARD, { organizationId: own }))
      clock = new Date(clock.getTime() + 1000)
      const second = await mine.authorize(payment(SANDBOX_CHALLENGE_CARD, { organizationId: own }))
      assert.deepEqual((await mine.payments(own)).map((row) => row.id), [first.authorizationId, second.authorizationId])
    })
  })
}
