import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { setTimeout as sleep } from 'node:timers/promises'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { checkLedger } from '../src/modules/ledger/index.ts'
import { bearer, ENGINES, individualUser, useApp, type TestContext } from './helpers.ts'
import { assertError, balanceOf, chainDeposit, commit, fund, openAccount, quoted, transactionOf, verifiedUser, type RequestForInformation } from './money.ts'
import { alterMessage, signMessage, testKeys } from './signing.ts'

/** A sender on the sandbox's bitcoin test chain that no user declared. */
const SENDER = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
/** BIP-173's P2WSH test vector on the test chain. */
const DESTINATION = 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7'

const person = (primary: string, secondary?: string) => ({ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: primary, ...(secondary ? { secondaryIdentifier: secondary } : {}), nameIdentifierType: 'LEGL' }] } } })
const originator = (primary: string, secondary?: string) => ({ ivms101: { originator: { originatorPersons: [person(primary, secondary)] } } })
const beneficiary = (primary: string, secondary?: string) => ({ ivms101: { beneficiary: { beneficiaryPersons: [person(primary, secondary)] } } })

type Rfi = RequestForInformation

function suiteOf(engine: (typeof ENGINES)[number], env: Record<string, string> = {}) {
  const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '0', ...env })
  const ctx = (): TestContext => suite.ctx

  /** A crypto deposit from `sender`, as the chain rail reports it; the worker runs it as far as it goes. */
  const deposit = (userId: string, accountId: string, amount: string, sender = SENDER) => chainDeposit(ctx(), { userId, accountId, amount, sender })

  const rfis = (userId: string, transactionId: string, token = suite.token) =>
    ctx().request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information`, headers: bearer(token, userId) })
  const rfi = (userId: string, transactionId: string, id: string, token = suite.token) =>
    ctx().request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information/${id}`, headers: bearer(token, userId) })
  const answer = (userId: string, transactionId: string, id: string, payload: unknown, token = suite.token) =>
    ctx().request({ method: 'PUT', url: `/core/transactions/${transactionId}/requests-for-information/${id}`, headers: bearer(token, userId), payload: payload as Record<string, unknown> })

  async function pending(userId: string, transactionId: string): Promise<Rfi> {
    const response = await rfis(userId, transactionId)
    assert.equal(response.status, 200, response.body)
    const list = response.json<{ requestsForInformation: Rfi[] }>().requestsForInformation
    assert.equal(list.length, 1, response.body)
    assert.equal(list[0]!.status, 'pending')
    return list[0]!
  }

  async function suspense(asset: string): Promise<string> {
    const row = await ctx().database.db.selectFrom('ledger_accounts').select('total').where('organization_id', '=', ctx().client.organizationId).where('system_code', '=', 'suspense').where('asset', '=', asset).executeTakeFirst()
    return row ? new BigNumber(row.total).toFixed() : '0'
  }

  async function ledgerHolds(): Promise<void> {
    const report = await checkLedger(ctx().database.db)
    assert.deepEqual(report.violations, [], JSON.stringify(report.violations))
  }

  async function btcHolder() {
    const userId = await verifiedUser(ctx(), suite.token)
    const btc = await openAccount(ctx(), suite.token, userId, 'BTC')
    return { userId, btc }
  }

  return { suite, ctx, deposit, rfis, rfi, answer, pending, suspense, ledgerHolds, btcHolder }
}

for (const engine of ENGINES) {
  describe(`travel rule: requests for information [${engine}]`, () => {
    const { suite, ctx, deposit, rfis, rfi, answer, pending, suspense, ledgerHolds, btcHolder } = suiteOf(engine)

    test('a crypto deposit below the threshold settles with no request; at or above it, from an undeclared sender, it waits on hold in suspense', async () => {
      const { userId, btc } = await btcHolder()
      // 0.001 BTC is worth about 65 US dollars in the sandbox: below the default threshold of 1000.
      const small = await deposit(userId, btc, '0.001')
      assert.equal((await transactionOf(ctx(), suite.token, userId, small)).status, 'completed')
      assert.deepEqual((await rfis(userId, small)).json(), { requestsForInformation: [] })

      const suspended = await suspense('BTC')
      const large = await deposit(userId, btc, '0.5')
      const held = await transactionOf(ctx(), suite.token, userId, large)
      assert.equal(held.status, 'on-hold')
      assert.deepEqual(held.statusDetails, { reason: 'pending-requests-for-information' })
      // The money is accounted for in suspense, and the user's balance did not move.
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, btc), { total: '0.001', available: '0.001' })
      assert.equal(new BigNumber(await suspense('BTC')).minus(suspended).toFixed(), '0.5')
      await ledgerHolds()

      const request = await pending(userId, large)
      assert.equal(request.type, 'travel-rule')
      assert.equal((request as Rfi & { transactionId?: string }).transactionId, large)
      assert.deepEqual(request.context, { direction: 'deposit', party: 'originator', network: 'bitcoin', asset: 'BTC', amount: '0.5', addresses: [SENDER] })
      assert.equal(request.data, undefined)
      assert.ok(Date.parse(request.expiresAt) > Date.now())
      assert.deepEqual((await rfi(userId, large, request.id)).json(), { requestForInformation: request })
      const events = (await eventsAbout(ctx().database.db, ctx().client.organizationId, { type: 'transaction', id: large })).map((event) => [event.type, (event.data as { transaction: { status: string } }).transaction.status])
      assert.deepEqual(events, [['core.transaction.created', 'processing'], ['core.transaction.status-changed', 'on-hold']])
    })

    test('answering with the originator releases the deposit: it settles from suspense into the account', async () => {
      const { userId, btc } = await btcHolder()
      const id = await deposit(userId, btc, '0.2')
      const suspended = await suspense('BTC')
      const request = await pending(userId, id)
      const response = await answer(userId, id, request.id, { data: originator('Doe', 'John') })
      assert.equal(response.status, 200, response.body)
      const answered = response.json<{ requestForInformation: Rfi }>().requestForInformation
      assert.equal(answered.status, 'ok')
      assert.deepEqual(answered.data, originator('Doe', 'John'))
      await ctx().services.worker.drain()
      const settled = await transactionOf(ctx(), suite.token, userId, id)
      assert.equal(settled.status, 'completed')
      assert.equal(settled.statusDetails, undefined)
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, btc), { total: '0.2', available: '0.2' })
      assert.equal(new BigNumber(suspended).minus(await suspense('BTC')).toFixed(), '0.2')
      const statuses = (await eventsAbout(ctx().database.db, ctx().client.organizationId, { type: 'transaction', id })).map((event) => (event.data as { transaction: { status: string } }).transaction.status)
      assert.deepEqual(statuses, ['processing', 'on-hold', 'processing', 'completed'])
      // Answered once: a second answer is refused and changes nothing.
      const again = await answer(userId, id, request.id, { data: originator('Roe') })
      assert.deepEqual(assertError(again, 409, 'operation_not_allowed'), { reasons: ['request-for-information-update-not-allowed'] })
      assert.deepEqual((await rfi(userId, id, request.id)).json<{ requestForInformation: Rfi }>().requestForInformation.data, originator('Doe', 'John'))
      await ledgerHolds()
    })

    test('an answer the travel-rule network refuses fails the deposit; its money stays in suspense, accounted for', async () => {
      const { userId, btc } = await btcHolder()
      const before = await suspense('BTC')
      const id = await deposit(userId, btc, '0.1')
      const request = await pending(userId, id)
      const response = await answer(userId, id, request.id, { data: originator('Refused', 'Rita') })
      assert.equal(response.status, 200, response.body)
      const refused = response.json<{ requestForInformation: Rfi }>().requestForInformation
      assert.equal(refused.status, 'failed')
      assert.deepEqual(refused.statusDetails, { reason: 'counterparty-refused' })
      await ctx().services.worker.drain()
      const failed = await transactionOf(ctx(), suite.token, userId, id)
      assert.equal(failed.status, 'failed')
      assert.deepEqual(failed.statusDetails, { reason: 'travel-rule-verification-failed' })
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, btc), { total: '0', available: '0' })
      assert.equal(new BigNumber(await suspense('BTC')).minus(before).toFixed(), '0.1')
      await ledgerHolds()
    })

    test('answers that describe nobody are 400 with violations, and change nothing', async () => {
      const { userId, btc } = await btcHolder()
      const id = await deposit(userId, btc, '0.1')
      const request = await pending(userId, id)
      const cases: [unknown, string][] = [
        [{}, 'data'],
        [{ data: {} }, 'data'],
        [{ data: 'yes' }, 'data'],
        [{ data: beneficiary('Doe') }, 'data.ivms101.originator.originatorPersons'],
        [{ data: { ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: '' }] } } }] } } } }, 'data.ivms101.originator.originatorPersons.0'],
        [{ data: { originatorEqualsBeneficiary: true } }, 'data.proof'],
        [{ data: { originatorEqualsBeneficiary: true, proof: { type: 'self-declaration', confirmed: false } } }, 'data.proof.confirmed'],
      ]
      for (const [payload, property] of cases) {
        const details = assertError(await answer(userId, id, request.id, payload), 400, 'request_invalid') as { context: string; violations: { property: string }[] }
        assert.equal(details.context, 'body', JSON.stringify(payload))
        assert.ok(details.violations.some((violation) => violation.property === property), `${JSON.stringify(payload)}: ${JSON.stringify(details.violations)}`)
      }
      assert.equal((await pending(userId, id)).status, 'pending')
      assert.equal((await transactionOf(ctx(), suite.token, userId, id)).status, 'on-hold')
    })

    test('a self-declaration is not enough at this value: a signed message is asked for', async () => {
      const { userId, btc } = await btcHolder()
      const id = await deposit(userId, btc, '0.1')
      const request = await pending(userId, id)
      const response = await answer(userId, id, request.id, { data: { originatorEqualsBeneficiary: true, proof: { type: 'self-declaration', confirmed: true, address: `bip122:000000000933ea01ad0ee984209779ba:${SENDER}` } } })
      assert.deepEqual(assertError(response, 409, 'operation_not_allowed'), { reasons: ['signature-proof-required'] })
      const forged = await answer(userId, id, request.id, { data: { originatorEqualsBeneficiary: true, proof: { type: 'bip-322', address: SENDER, attestation: 'I own it', proof: 'AkcwRAIgM2gBAQqvZX15ZiysmKmQpDrG83avLIT492QBzLnQIxYCIBaTpOaD20qRlEylyxFSeEA2ba9YOixpX8z46TSDtS40ASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI=' } } })
      assert.equal(assertError(forged, 409, 'operation_not_allowed')?.reasons instanceof Array, true)
      const elsewhere = await answer(userId, id, request.id, { data: { originatorEqualsBeneficiary: true, proof: { type: 'bip-322', address: DESTINATION, attestation: 'I own it', proof: 'AA==' } } })
      assert.deepEqual(assertError(elsewhere, 409, 'operation_not_allowed'), { reasons: ['proof-invalid'], reason: 'address-mismatch' })
      assert.equal((await pending(userId, id)).status, 'pending')
    })

    test('the user\'s own wallet, proved with a message signed by the address\'s key (BIP-322, taproot): the request is ok and the deposit settles', async () => {
      const { userId, btc } = await btcHolder()
      const own = testKeys.primary.addresses.bitcoin.test.p2tr
      const id = await deposit(userId, btc, '0.1', own)
      const request = await pending(userId, id)
      const message = `I control ${own}: request ${request.id}`
      const signed = signMessage({ family: 'bitcoin', chain: 'test', addressType: 'p2tr', message })
      const proof = { type: 'bip-322', address: `bip122:000000000933ea01ad0ee984209779ba:${own}`, attestation: message, proof: signed.signature }
      // The same signature over another message, or another key's signature, proves nothing.
      const altered = await answer(userId, id, request.id, { data: { originatorEqualsBeneficiary: true, proof: { ...proof, attestation: alterMessage(message) } } })
      assert.deepEqual(assertError(altered, 409, 'operation_not_allowed'), { reasons: ['proof-invalid'], reason: 'signature-mismatch' })
      const otherKey = signMessage({ family: 'bitcoin', chain: 'test', addressType: 'p2tr', message, privateKey: testKeys.secondary.secp256k1 })
      assertError(await answer(userId, id, request.id, { data: { originatorEqualsBeneficiary: true, proof: { ...proof, proof: otherKey.signature } } }), 409, 'operation_not_allowed')
      assert.equal((await pending(userId, id)).status, 'pending')
      const response = await answer(userId, id, request.id, { data: { originatorEqualsBeneficiary: true, proof } })
      assert.equal(response.json<{ requestForInformation: Rfi }>().requestForInformation.status, 'ok', response.body)
      await ctx().services.worker.drain()
      assert.equal((await transactionOf(ctx(), suite.token, userId, id)).status, 'completed')
    })

    test('a sender the user declared (a crypto external account with a completed verification) needs no request', async () => {
      const { userId, btc } = await btcHolder()
      const own = testKeys.primary.addresses.bitcoin.test.p2wpkh
      const linked = await ctx().request({ method: 'POST', url: '/core/external-accounts', headers: bearer(suite.token, userId), payload: { type: 'crypto', asset: 'BTC', network: 'bitcoin', label: 'My wallet', address: own } })
      assert.equal(linked.status, 201, linked.body)
      const accountId = linked.json<{ externalAccount: { id: string } }>().externalAccount.id
      // Not declared yet: held.
      const first = await deposit(userId, btc, '0.1', own)
      assert.equal((await transactionOf(ctx(), suite.token, userId, first)).status, 'on-hold')
      const started = await ctx().request({ method: 'POST', url: `/core/external-accounts/${accountId}/verifications`, headers: bearer(suite.token, userId), payload: { level: 'declared' } })
      assert.equal(started.status, 201, started.body)
      const declared = await ctx().request({ method: 'PUT', url: `/core/external-accounts/${accountId}/verifications/declared`, headers: bearer(suite.token, userId), payload: { proof: { isVASP: false, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true } } })
      assert.equal(declared.status, 200, declared.body)
      const second = await deposit(userId, btc, '0.1', own)
      assert.equal((await transactionOf(ctx(), suite.token, userId, second)).status, 'completed')
      assert.deepEqual((await rfis(userId, second)).json(), { requestsForInformation: [] })
      // And a withdrawal to it carries no travel-rule requirement.
      const quote = await quoted(ctx(), suite.token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'external-account', id: accountId }, denomination: { asset: 'BTC', amount: '0.05' } })
      assert.deepEqual(quote.requirements, [])
      const toBare = await quoted(ctx(), suite.token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: own }, denomination: { asset: 'BTC', amount: '0.05' } })
      assert.deepEqual(toBare.requirements, [])
    })

    test('requests are the owner\'s alone: other users, other organizations, other transactions get 404; scopes are checked', async () => {
      const { userId, btc } = await btcHolder()
      const id = await deposit(userId, btc, '0.1')
      const request = await pending(userId, id)
      const neighbour = (await ctx().createUser(suite.token, individualUser())).id
      const otherToken = await ctx().token(await ctx().newClient())
      const stranger = (await ctx().createUser(otherToken, individualUser())).id
      for (const [who, token] of [[neighbour, suite.token], [stranger, otherToken]] as const) {
        assert.deepEqual(assertError(await rfis(who, id, token), 404, 'entity_not_found'), { entity: 'transaction' })
        assert.deepEqual(assertError(await rfi(who, id, request.id, token), 404, 'entity_not_found'), { entity: 'transaction' })
        assert.deepEqual(assertError(await answer(who, id, request.id, { data: originator('Doe') }, token), 404, 'entity_not_found'), { entity: 'transaction' })
      }
      // A transaction of the user without this request.
      const small = await deposit(userId, btc, '0.001')
      assert.deepEqual(assertError(await rfi(userId, small, request.id), 404, 'entity_not_found'), { entity: 'request-for-information' })
      assert.deepEqual(assertError(await answer(userId, small, request.id, { data: originator('Doe') }), 404, 'entity_not_found'), { entity: 'request-for-information' })
      assert.deepEqual(assertError(await rfi(userId, id, '00000000-0000-4000-8000-000000000000'), 404, 'entity_not_found'), { entity: 'request-for-information' })
      assert.deepEqual(assertError(await rfi(userId, id, 'not-a-uuid'), 404, 'entity_not_found'), { entity: 'request-for-information' })
      // Without the scopes.
      const readOnly = await ctx().token(ctx().client, 'core.transactions:read core.users:act-on-behalf-of')
      assert.equal((await rfis(userId, id, readOnly)).status, 403)
      const reader = await ctx().token(ctx().client, 'core.transactions.requests-for-information:read core.users:act-on-behalf-of')
      assert.equal((await rfis(userId, id, reader)).status, 200)
      assertError(await answer(userId, id, request.id, { data: originator('Doe') }, reader), 403, 'token_insufficient_scopes')
      assert.equal((await pending(userId, id)).status, 'pending')
    })

    test('a crypto withdrawal at or above the threshold carries the travel-rule requirement and waits on hold until its beneficiary is described', async () => {
      const { userId, btc } = await btcHolder()
      await fund(ctx(), userId, btc, 'BTC', '1')
      const small = await quoted(ctx(), suite.token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: DESTINATION }, denomination: { asset: 'BTC', amount: '0.001' } })
      assert.deepEqual(small.requirements, [])
      const quote = await quoted(ctx(), suite.token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: DESTINATION }, denomination: { asset: 'BTC', amount: '0.1' } })
      assert.deepEqual(quote.requirements, ['travel-rule'])
      const created = await commit(ctx(), suite.token, userId, quote.id)
      assert.equal(created.status, 201, created.body)
      const id = created.json<{ transaction: { id: string } }>().transaction.id
      await ctx().services.worker.drain()
      const held = await transactionOf(ctx(), suite.token, userId, id)
      assert.equal(held.status, 'on-hold')
      assert.deepEqual(held.statusDetails, { reason: 'pending-requests-for-information' })
      const balance = await balanceOf(ctx(), suite.token, userId, btc)
      assert.equal(balance.total, '1')
      assert.ok(Number(balance.available) <= 0.9, JSON.stringify(balance))
      const request = await pending(userId, id)
      assert.deepEqual(request.context, { direction: 'withdrawal', party: 'beneficiary', network: 'bitcoin', asset: 'BTC', amount: quote.destination.amount, addresses: [DESTINATION] })
      // A deposit's originator does not describe a withdrawal's beneficiary.
      assertError(await answer(userId, id, request.id, { data: originator('Doe') }), 400, 'request_invalid')
      const response = await answer(userId, id, request.id, { data: beneficiary('Roe', 'Jane') })
      assert.equal(response.json<{ requestForInformation: Rfi }>().requestForInformation.status, 'ok', response.body)
      await ctx().services.worker.drain()
      assert.equal((await transactionOf(ctx(), suite.token, userId, id)).status, 'completed')
      assert.equal((await balanceOf(ctx(), suite.token, userId, btc)).total, balance.available)
      await ledgerHolds()
    })

    test('a refused withdrawal fails and its hold is released', async () => {
      const { userId, btc } = await btcHolder()
      await fund(ctx(), userId, btc, 'BTC', '1')
      const quote = await quoted(ctx(), suite.token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: DESTINATION }, denomination: { asset: 'BTC', amount: '0.1' } })
      const id = (await commit(ctx(), suite.token, userId, quote.id)).json<{ transaction: { id: string } }>().transaction.id
      await ctx().services.worker.drain()
      const request = await pending(userId, id)
      assert.equal((await answer(userId, id, request.id, { data: beneficiary('Refused') })).json<{ requestForInformation: Rfi }>().requestForInformation.status, 'failed')
      await ctx().services.worker.drain()
      const failed = await transactionOf(ctx(), suite.token, userId, id)
      assert.equal(failed.status, 'failed')
      assert.deepEqual(failed.statusDetails, { reason: 'travel-rule-verification-failed' })
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, btc), { total: '1', available: '1' })
      await ledgerHolds()
    })
  })

  describe(`travel rule: requests that expire [${engine}]`, () => {
    const { suite, ctx, deposit, answer, pending, suspense, ledgerHolds, btcHolder } = suiteOf(engine, { TRAVEL_RULE_REQUEST_TTL_SECONDS: '1' })

    test('nobody answered in time: the request expires, the transaction fails, a late answer is refused', async () => {
      const { userId, btc } = await btcHolder()
      const before = await suspense('BTC')
      const id = await deposit(userId, btc, '0.1')
      const request = await pending(userId, id)
      await sleep(Math.max(0, Date.parse(request.expiresAt) - Date.now()) + 50)
      // The flow's job comes back at the expiry.
      await ctx().database.db.updateTable('jobs').set({ run_at: new Date() }).where('organization_id', '=', ctx().client.organizationId).execute()
      await ctx().services.worker.drain()
      const failed = await transactionOf(ctx(), suite.token, userId, id)
      assert.equal(failed.status, 'failed')
      assert.deepEqual(failed.statusDetails, { reason: 'travel-rule-verification-failed' })
      const late = await answer(userId, id, request.id, { data: originator('Doe') })
      assert.deepEqual(assertError(late, 409, 'operation_not_allowed'), { reasons: ['request-for-information-update-not-allowed'] })
      const expired = await ctx().request({ method: 'GET', url: `/core/transactions/${id}/requests-for-information/${request.id}`, headers: bearer(suite.token, userId) })
      assert.equal(expired.json<{ requestForInformation: Rfi }>().requestForInformation.status, 'expired')
      assert.equal(new BigNumber(await suspense('BTC')).minus(before).toFixed(), '0.1')
      await ledgerHolds()
    })
  })
}
