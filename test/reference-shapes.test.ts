/**
 * External accounts, withdrawal and card deposit quotes and transactions, their events (status changes included), the end
 * of a user's asset cooldown, payment, KYC and travel-rule widget sessions and requests for information,
 * checked against the upstream reference documents' own schemas (not only against our generated document): what a client written for the reference
 * reads from us must be what it expects. Crypto external accounts exist only in the specification (the reference's
 * `external-account.type` has no `crypto`), so they are checked against the reference schema with that one value
 * and its details added.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { COOLDOWN_END_JOB } from '../src/modules/reference/index.ts'
import { STATUS_CHANGE_JOB } from '../src/modules/external-accounts/index.ts'
import { bearer, ENGINES, individualUser, uploadedFile, USER_IP, useApp, type TestResponse } from './helpers.ts'
import { assertError, commit, fund, openAccount, quoted, verifiedUser } from './money.ts'

const REFERENCE = path.resolve(import.meta.dirname, '../../shared/reference/core-openapi.json')
const WIDGETS_REFERENCE = path.resolve(import.meta.dirname, '../../shared/reference/widgets-openapi.json')
const available = fs.existsSync(REFERENCE) && fs.existsSync(WIDGETS_REFERENCE)

type Json = Record<string, unknown>

function referenceValidator(file = REFERENCE) {
  type Bodies = Record<string, { content: Record<string, { schema: Json }> }>
  const document = JSON.parse(fs.readFileSync(file, 'utf8')) as { components: { schemas: Record<string, Json>; responses: Bodies; requestBodies?: Bodies } }
  // The specification's crypto external accounts, on top of the reference's shape.
  const schemas = structuredClone(document.components.schemas)
  const account = schemas['external-account'] as { properties: { type: { enum: string[] }; details: { oneOf: Json[] } } } | undefined
  account?.properties.type.enum.push('crypto')
  account?.properties.details.oneOf.push({ type: 'object', properties: { address: { type: 'string' }, reference: { type: 'string' } }, required: ['address'] })
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  ajv.addSchema({ $id: 'reference.json', components: { schemas, responses: document.components.responses, requestBodies: document.components.requestBodies ?? {} } })
  const rewrite = (schema: Json) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"reference.json#/components/')) as Json
  const check = (label: string, schema: Json, value: unknown) => {
    const validate = ajv.compile(rewrite(schema))
    assert.ok(validate(value), `${label} does not match the reference: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 600)}`)
  }
  return {
    /** A response body against the reference's named response. */
    response(name: string, response: TestResponse) {
      check(name, document.components.responses[name]!.content['application/json']!.schema, response.json())
    },
    /** A request body we send (and accept) against the reference's named request body: what its clients send. */
    request(name: string, value: unknown) {
      check(name, document.components.requestBodies![name]!.content['application/json']!.schema, value)
    },
    /** A value against one of the reference's schemas. */
    schema(name: string, value: unknown) {
      check(name, { $ref: `#/components/schemas/${name}` }, value)
    },
  }
}

for (const engine of ENGINES) {
  describe(`reference shapes: external accounts, withdrawals, card deposits, widget sessions [${engine}]`, { skip: !available && 'reference not found' }, () => {
    const suite = useApp(engine, { SANDBOX_RAIL_SETTLE_MS: '0', VELOCITY_MAX_MOVEMENTS: '0' })

    test('every kind of external account, every operation, the withdrawals to them and their events', async () => {
      const reference = referenceValidator()
      // The checks can fail: a shape the reference does not allow is refused.
      assert.throws(() => reference.schema('external-account', { id: 'not-a-uuid', type: 'pigeon' }), /does not match the reference/)
      const ctx = suite.ctx
      const userId = await verifiedUser(ctx, suite.token)
      const headers = bearer(suite.token, userId)
      const create = async (payload: Json) => {
        const response = await ctx.request({ method: 'POST', url: '/core/external-accounts', headers, payload })
        assert.equal(response.status, 201, response.body)
        reference.response('create-external-account-response', response)
        return response.json<{ externalAccount: { id: string } }>().externalAccount.id
      }
      const expiry = { month: 12, year: new Date().getUTCFullYear() + 2 }
      const card = await create({ type: 'card', label: 'Visa', number: '4242424242424242', securityCode: '123', expiryDate: expiry })
      const sepa = await create({ type: 'bank', asset: 'EUR', network: 'sepa', label: 'SEPA', iban: 'DE67370400440532010001', bic: 'COBADEFFXXX' })
      const failing = await create({ type: 'bank', asset: 'EUR', network: 'sepa', label: 'Returns', iban: 'DE40370400440532010002', bic: 'COBADEFFXXX' })
      await create({ type: 'bank', asset: 'GBP', network: 'fps', label: 'FPS', sortCode: '089999', accountNumber: '66374958' })
      await create({
        type: 'bank',
        asset: 'USD',
        network: 'ach',
        label: 'ACH',
        routingNumber: '121000248',
        accountNumber: '9876540001',
        accountType: 'checking',
        address: { country: 'US', subdivision: 'US-CA', city: 'San Francisco', line1: '1 Main Street', postalCode: '94102' },
      })
      const crypto = await create({ type: 'crypto', asset: 'BTC', network: 'bitcoin', label: 'Wallet', address: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx' })
      // A crypto address with verifications (the specification's compact form) still reads as the reference's account;
      // the verifications of an account that has none is the reference's external account 404.
      const verifications = `/core/external-accounts/${crypto}/verifications`
      assert.equal((await ctx.request({ method: 'POST', url: verifications, headers, payload: { level: 'declared' } })).status, 201)
      assert.equal((await ctx.request({ method: 'POST', url: verifications, headers, payload: { level: 'verified' } })).status, 201)
      const declared = { proof: { isVASP: false, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true } }
      assert.equal((await ctx.request({ method: 'PUT', url: `${verifications}/declared`, headers, payload: declared })).status, 200)
      reference.response('get-external-account-response', await ctx.request({ method: 'GET', url: `/core/external-accounts/${crypto}`, headers }))
      const notCrypto = await ctx.request({ method: 'GET', url: `/core/external-accounts/${sepa}/verifications`, headers })
      assert.equal(notCrypto.status, 404)
      reference.response('get-external-account-not-found-response', notCrypto)

      reference.response('list-external-accounts-response', await ctx.request({ method: 'GET', url: '/core/external-accounts', headers }))
      reference.response('get-external-account-response', await ctx.request({ method: 'GET', url: `/core/external-accounts/${card}`, headers }))
      reference.response('update-external-account-response', await ctx.request({ method: 'PATCH', url: `/core/external-accounts/${card}`, headers, payload: { label: 'Renamed' } }))
      const missing = await ctx.request({ method: 'GET', url: '/core/external-accounts/0190a8c1-0000-7000-8000-000000000000', headers })
      assert.equal(missing.status, 404)
      reference.response('get-external-account-not-found-response', missing)
      const duplicate = await ctx.request({ method: 'POST', url: '/core/external-accounts', headers, payload: { type: 'bank', asset: 'EUR', network: 'sepa', label: 'Again', iban: 'DE67370400440532010001', bic: 'COBADEFFXXX' } })
      assert.equal(duplicate.status, 409)
      reference.response('create-external-account-conflict-response', duplicate)

      // Withdrawals: to a bank account, a card and a crypto address; one that the bank returns.
      const eurAccount = await openAccount(ctx, suite.token, userId, 'EUR')
      await fund(ctx, userId, eurAccount, 'EUR', '1000')
      const btcAccount = await openAccount(ctx, suite.token, userId, 'BTC')
      await fund(ctx, userId, btcAccount, 'BTC', '1')
      const bodies = [
        { origin: { type: 'account', id: eurAccount }, destination: { type: 'external-account', id: sepa }, denomination: { asset: 'EUR', amount: '10' } },
        { origin: { type: 'account', id: eurAccount }, destination: { type: 'external-account', id: card }, denomination: { asset: 'EUR', amount: '11' } },
        { origin: { type: 'account', id: eurAccount }, destination: { type: 'external-account', id: failing }, denomination: { asset: 'EUR', amount: '12' } },
        { origin: { type: 'account', id: btcAccount }, destination: { type: 'crypto-address', asset: 'BTC', network: 'bitcoin', address: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx' }, denomination: { asset: 'BTC', amount: '0.01' } },
      ]
      const ids: string[] = []
      for (const body of bodies) {
        const quoteResponse = await ctx.request({ method: 'POST', url: '/core/transactions/quote', headers, payload: body })
        assert.equal(quoteResponse.status, 201, quoteResponse.body)
        reference.response('create-quote-response', quoteResponse)
        const committed = await commit(ctx, suite.token, userId, quoteResponse.json<{ quote: { id: string } }>().quote.id)
        assert.equal(committed.status, 201, committed.body)
        reference.response('create-transaction-response', committed)
        ids.push(committed.json<{ transaction: { id: string } }>().transaction.id)
      }
      const again = await quoted(ctx, suite.token, userId, bodies[0]!)
      const refused = await commit(ctx, suite.token, userId, again.id)
      assert.equal(refused.status, 409)
      reference.response('create-transaction-conflict-response', refused)

      await ctx.services.worker.drain()
      for (const id of ids) reference.response('get-transaction-response', await ctx.request({ method: 'GET', url: `/core/transactions/${id}`, headers }))
      reference.response('list-transactions-response', await ctx.request({ method: 'GET', url: '/core/transactions?type=withdrawal', headers }))

      // The events as a webhook will carry them: the envelope around what the outbox recorded.
      const events = await ctx.database.db.selectFrom('outbox_events').selectAll().where('user_id', '=', userId).where('type', 'like', 'core.%').orderBy('id').execute()
      const envelope = (event: (typeof events)[number]) => ({ id: event.id, type: event.type, createdAt: event.occurred_at.toISOString(), data: event.data })
      const checked = { externalAccount: 0, transaction: 0 }
      for (const event of events) {
        if (event.type.startsWith('core.external-account.')) {
          reference.schema('external-account-webhook-event', envelope(event))
          checked.externalAccount++
        }
        if (event.type.startsWith('core.transaction.') && ids.includes(event.subject_id)) {
          reference.schema('transaction-webhook-event', envelope(event))
          checked.transaction++
        }
      }
      assert.equal(checked.externalAccount, 6)
      assert.equal(checked.transaction, 2 * ids.length)
    })

    test('KYC widget sessions and their refusals', async () => {
      const widgets = referenceValidator(WIDGETS_REFERENCE)
      const ctx = suite.ctx
      const create = (userId: string, payload: Record<string, unknown>) => ctx.request({ method: 'POST', url: '/widgets/kyc/sessions', headers: bearer(suite.token, userId), payload })
      const newcomer = (await ctx.createUser(suite.token)).id
      for (const payload of [{ flow: 'verify' }, { flow: 'verify', processes: ['identity', 'proof-of-address', 'profile'] }]) {
        const response = await create(newcomer, payload)
        assert.equal(response.status, 201, response.body)
        widgets.response('create-kyc-widget-session-response', response)
      }
      const incomplete = await create(newcomer, { flow: 'verify', processes: ['identity'] })
      assert.equal(incomplete.status, 409, incomplete.body)
      widgets.response('create-kyc-widget-session-conflict-response', incomplete)
      // Nothing left to submit (profile complete, documents checked): an empty list, still the reference's shape.
      const verified = await verifiedUser(ctx, suite.token)
      const profile = await ctx.request({ method: 'PATCH', url: '/core/kyc/processes/profile', headers: bearer(suite.token, verified), payload: { input: { fullName: 'John Doe', birthdate: '1987-01-01' } } })
      assert.equal(profile.status, 200, profile.body)
      const done = await create(verified, { flow: 'verify' })
      assert.equal(done.status, 201, done.body)
      assert.deepEqual(done.json<{ session: { data: { processes: string[] } } }>().session.data.processes, [])
      widgets.response('create-kyc-widget-session-response', done)
    })

    test('card deposits (frictionless, challenged, declined, refused), their events, and payment widget sessions', async () => {
      const reference = referenceValidator()
      const widgets = referenceValidator(WIDGETS_REFERENCE)
      const ctx = suite.ctx
      const userId = await verifiedUser(ctx, suite.token)
      const headers = bearer(suite.token, userId)
      const eur = await openAccount(ctx, suite.token, userId, 'EUR')
      const requirements = { params: { requirements: [{ name: 'authorize:3ds', returnUrl: 'https://shop.example/paid' }] } }
      const ids: string[] = []
      for (const number of ['4242424242424242', '4000000000003220', '4000000000000259']) {
        const linked = await ctx.request({
          method: 'POST',
          url: '/core/external-accounts',
          headers,
          payload: { type: 'card', label: 'Card', number, securityCode: '123', expiryDate: { month: 12, year: new Date().getUTCFullYear() + 3 } },
        })
        assert.equal(linked.status, 201, linked.body)
        const card = linked.json<{ externalAccount: { id: string } }>().externalAccount.id
        const body = { origin: { type: 'external-account', id: card }, destination: { type: 'account', id: eur }, denomination: { asset: 'EUR', amount: '20' } }
        const quoteResponse = await ctx.request({ method: 'POST', url: '/core/transactions/quote', headers, payload: body })
        assert.equal(quoteResponse.status, 201, quoteResponse.body)
        reference.response('create-quote-response', quoteResponse)
        const quoteId = quoteResponse.json<{ quote: { id: string } }>().quote.id

        const missing = await commit(ctx, suite.token, userId, quoteId)
        assert.equal(missing.status, 409, missing.body)
        reference.response('create-transaction-conflict-response', missing)

        const session = await ctx.request({ method: 'POST', url: '/widgets/payment/sessions', headers, payload: { flow: 'authorize', data: { quoteId, domain: 'shop.example' } } })
        assert.equal(session.status, 201, session.body)
        widgets.response('create-payment-widget-session-response', session)

        const committed = await commit(ctx, suite.token, userId, quoteId, { body: requirements })
        assert.equal(committed.status, 201, committed.body)
        reference.response('create-transaction-response', committed)
        ids.push(committed.json<{ transaction: { id: string } }>().transaction.id)
      }
      const challenged = (await ctx.request({ method: 'GET', url: `/core/transactions/${ids[1]}`, headers })).json<{ transaction: { origin: { node: { confirmationUrl?: string } } } }>()
      assert.ok(challenged.transaction.origin.node.confirmationUrl, 'the challenged deposit shows where to confirm it')
      await ctx.services.worker.drain()
      for (const id of ids) reference.response('get-transaction-response', await ctx.request({ method: 'GET', url: `/core/transactions/${id}`, headers }))
      reference.response('list-transactions-response', await ctx.request({ method: 'GET', url: '/core/transactions?type=deposit', headers }))
      for (const flow of ['select-for-deposit', 'select-for-withdrawal']) {
        widgets.response('create-payment-widget-session-response', await ctx.request({ method: 'POST', url: '/widgets/payment/sessions', headers, payload: { flow } }))
      }

      const events = await ctx.database.db.selectFrom('outbox_events').selectAll().where('user_id', '=', userId).where('type', 'like', 'core.transaction.%').orderBy('id').execute()
      const envelope = (event: (typeof events)[number]) => ({ id: event.id, type: event.type, createdAt: event.occurred_at.toISOString(), data: event.data })
      const checked = events.filter((event) => ids.includes(event.subject_id))
      for (const event of checked) reference.schema('transaction-webhook-event', envelope(event))
      // Created for each; the frictionless one completed, the declined one failed; the challenged one still waits.
      assert.equal(checked.length, ids.length + 2)
    })

    test('travel-rule widget sessions (deposit and withdrawal forms, their 404 and 409), and the answer their widget sends', async () => {
      const reference = referenceValidator()
      const widgets = referenceValidator(WIDGETS_REFERENCE)
      const ctx = suite.ctx
      const userId = await verifiedUser(ctx, suite.token)
      const headers = bearer(suite.token, userId)
      const btc = await openAccount(ctx, suite.token, userId, 'BTC')
      const { transactionId } = await ctx.services.deposits.record(ctx.database.db, {
        organizationId: ctx.client.organizationId,
        userId,
        accountId: btc,
        asset: 'BTC',
        amount: '0.1',
        network: 'bitcoin',
        source: { type: 'crypto-address', network: 'bitcoin', address: 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv' },
        reference: `shapes-${randomBytes(6).toString('hex')}`,
      })
      await ctx.services.worker.drain()
      const listed = await ctx.request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information`, headers })
      reference.response('list-transaction-requests-for-information-response', listed)
      const requestId = listed.json<{ requestsForInformation: { id: string }[] }>().requestsForInformation[0]!.id
      reference.response('get-transaction-request-for-information-response', await ctx.request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information/${requestId}`, headers }))

      const sessions = '/widgets/travel-rule/sessions'
      const deposit = await ctx.request({ method: 'POST', url: sessions, headers, payload: { flow: 'deposit-form', data: { requestForInformationId: requestId } } })
      assert.equal(deposit.status, 201, deposit.body)
      widgets.response('create-travel-rule-widget-session-response', deposit)
      widgets.response('create-travel-rule-widget-session-response', await ctx.request({ method: 'POST', url: sessions, headers, payload: { flow: 'deposit-form', data: { transactionId } } }))
      const missing = await ctx.request({ method: 'POST', url: sessions, headers, payload: { flow: 'deposit-form', data: { requestForInformationId: '0190a8c1-0000-7000-8000-000000000000' } } })
      assertError(missing, 404, 'entity_not_found')
      widgets.response('create-travel-rule-widget-session-not-found-response', missing)

      await fund(ctx, userId, btc, 'BTC', '1')
      const destination = { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7' }
      const quote = await quoted(ctx, suite.token, userId, { origin: { type: 'account', id: btc }, destination, denomination: { asset: 'BTC', amount: '0.1' } })
      const withdrawal = await ctx.request({ method: 'POST', url: sessions, headers, payload: { flow: 'withdrawal-form', data: { quoteId: quote.id } } })
      assert.equal(withdrawal.status, 201, withdrawal.body)
      widgets.response('create-travel-rule-widget-session-response', withdrawal)
      const small = await quoted(ctx, suite.token, userId, { origin: { type: 'account', id: btc }, destination, denomination: { asset: 'BTC', amount: '0.001' } })
      const conflict = await ctx.request({ method: 'POST', url: sessions, headers, payload: { flow: 'withdrawal-form', data: { quoteId: small.id } } })
      assertError(conflict, 409, 'operation_not_allowed')
      widgets.response('create-travel-rule-widget-session-conflict-response', conflict)

      // The widget's answer reads as the core API's answer to the same request.
      const token = deposit.json<{ session: { token: string } }>().session.token
      const answer = (data: Json) => ctx.request({ method: 'PUT', url: `${sessions}/current/request-for-information`, headers: bearer(token), payload: { data } })
      const current = await ctx.request({ method: 'GET', url: `${sessions}/current`, headers: bearer(token) })
      reference.schema('request-for-information', current.json<{ requestForInformation: unknown }>().requestForInformation)
      const person = { ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: 'Doe', nameIdentifierType: 'LEGL' }] } } }] } } }
      const answered = await answer(person)
      assert.equal(answered.status, 200, answered.body)
      reference.response('update-transaction-request-for-information-response', answered)
      const again = await answer(person)
      assertError(again, 409, 'operation_not_allowed')
      reference.response('update-transaction-request-for-information-conflict-response', again)
    })

    test('user and KYC events: created, deleted, and process status changes, in the reference\'s webhook shapes', async () => {
      const reference = referenceValidator()
      const ctx = suite.ctx
      const userId = await verifiedUser(ctx, suite.token)
      const deleted = await ctx.request({ method: 'DELETE', url: '/core/users/me', headers: bearer(suite.token, userId), payload: { review: { reason: 'closure-per-user-request' } } })
      assert.equal(deleted.status, 204, deleted.body)
      const events = await ctx.database.db.selectFrom('outbox_events').selectAll().where('organization_id', '=', ctx.client.organizationId).where('user_id', '=', userId).orderBy('id').execute()
      const envelope = (event: (typeof events)[number]) => ({ id: event.id, type: event.type, createdAt: event.occurred_at.toISOString(), data: event.data })
      const types = events.map((event) => event.type)
      assert.equal(types[0], 'core.user.created')
      assert.equal(types.at(-1), 'core.user.deleted')
      for (const event of events) {
        if (event.type.startsWith('core.user.')) reference.schema('user-webhook-event', envelope(event))
        if (event.type.startsWith('core.kyc.')) reference.schema('kyc-webhook-event', envelope(event))
      }
      assert.ok(types.some((type) => type.startsWith('core.kyc.')), types.join(', '))
      assert.equal((events.at(-1)!.data as { user: { id: string } }).user.id, userId)
    })

    test('account events: created, balance changed, archived, in the reference\'s webhook shapes', async () => {
      const reference = referenceValidator()
      const ctx = suite.ctx
      const userId = await verifiedUser(ctx, suite.token)
      const eur = await openAccount(ctx, suite.token, userId, 'EUR')
      await fund(ctx, userId, eur, 'EUR', '25')
      await ctx.services.worker.drain()
      const spare = await openAccount(ctx, suite.token, userId, 'BTC')
      const archived = await ctx.request({ method: 'DELETE', url: `/core/accounts/${spare}`, headers: bearer(suite.token, userId) })
      assert.equal(archived.status, 204, archived.body)
      const events = await ctx.database.db.selectFrom('outbox_events').selectAll().where('organization_id', '=', ctx.client.organizationId).where('user_id', '=', userId).where('type', 'like', 'core.account.%').orderBy('id').execute()
      const envelope = (event: (typeof events)[number]) => ({ id: event.id, type: event.type, createdAt: event.occurred_at.toISOString(), data: event.data })
      for (const event of events) reference.schema('account-webhook-event', envelope(event))
      const seen = new Set(events.map((event) => event.type))
      assert.deepEqual([...seen].sort(), ['core.account.archived', 'core.account.balance-changed', 'core.account.created'])
      const balance = events.filter((event) => event.type === 'core.account.balance-changed').at(-1)!.data as { account: { id: string; balance: { total: string } } }
      assert.deepEqual([balance.account.id, balance.account.balance.total], [eur, '25'])
    })

    test('external account status changes and the end of a cooldown, in the reference\'s webhook shapes', async () => {
      const reference = referenceValidator()
      const ctx = suite.ctx
      const db = ctx.database.db
      const userId = await verifiedUser(ctx, suite.token)
      const headers = bearer(suite.token, userId)
      const link = async (number: string, expiryDate: { month: number; year: number }) => {
        const response = await ctx.request({ method: 'POST', url: '/core/external-accounts', headers, payload: { type: 'card', label: 'Card', number, securityCode: '123', expiryDate } })
        assert.equal(response.status, 201, response.body)
        return response.json<{ externalAccount: { id: string; details: Json } }>().externalAccount
      }
      // A card the issuer refuses for good (the sandbox rail's 4000000000000143) fails with the withdrawal to it.
      const refused = await link('4000000000000143', { month: 12, year: new Date().getUTCFullYear() + 2 })
      const eur = await openAccount(ctx, suite.token, userId, 'EUR')
      await fund(ctx, userId, eur, 'EUR', '100')
      const quote = await quoted(ctx, suite.token, userId, { origin: { type: 'account', id: eur }, destination: { type: 'external-account', id: refused.id }, denomination: { asset: 'EUR', amount: '10' } })
      assert.equal((await commit(ctx, suite.token, userId, quote.id)).status, 201)
      // A card expiring this month, once the month is over.
      const now = new Date()
      const expiring = await link('4242424242424242', { month: now.getUTCMonth() + 1, year: now.getUTCFullYear() })
      const lastYear = { month: 12, year: now.getUTCFullYear() - 1 }
      await db.updateTable('external_accounts').set({ details: JSON.stringify({ ...expiring.details, expiryDate: lastYear }) }).where('id', '=', expiring.id).execute()
      await db.updateTable('jobs').set({ run_at: now }).where('type', '=', STATUS_CHANGE_JOB).where(sql<string>`payload->>'externalAccountId'`, '=', expiring.id).execute()
      // A UK resident a day after their creation: their cooldown ends.
      const briton = (await ctx.createUser(suite.token)).id
      const endsAt = new Date(now.getTime() - 1000)
      await db.updateTable('users').set({ created_at: new Date(endsAt.getTime() - 24 * 3_600_000) }).where('id', '=', briton).execute()
      await db.updateTable('jobs').set({ run_at: endsAt, payload: JSON.stringify({ userId: briton, endsAt: endsAt.toISOString() }) }).where('type', '=', COOLDOWN_END_JOB).where(sql<string>`payload->>'userId'`, '=', briton).execute()
      await ctx.services.worker.drain()

      const events = await db.selectFrom('outbox_events').selectAll().where('user_id', 'in', [userId, briton]).where('type', 'in', ['core.external-account.status-changed', 'core.assets.cooldown-ended']).orderBy('id').execute()
      const envelope = (event: (typeof events)[number]) => ({ id: event.id, type: event.type, createdAt: event.occurred_at.toISOString(), data: event.data })
      const statuses: string[] = []
      for (const event of events) {
        if (event.type === 'core.assets.cooldown-ended') {
          reference.schema('assets-cooldown-webhook-event', envelope(event))
          assert.equal((event.data as { userId: string }).userId, briton)
        } else {
          reference.schema('external-account-webhook-event', envelope(event))
          const account = (event.data as { externalAccount: { id: string; status: string; statusDetails: { reason: string } } }).externalAccount
          statuses.push(`${account.id === refused.id ? 'refused' : 'expiring'}:${account.status}:${account.statusDetails.reason}`)
        }
      }
      assert.deepEqual(statuses.sort(), ['expiring:expired:card-expired', 'refused:failed:card-permanently-declined-by-bank'])
      assert.equal(events.filter((event) => event.type === 'core.assets.cooldown-ended').length, 1)
      // The validator refuses what the reference does not allow.
      assert.throws(() => reference.schema('assets-cooldown-webhook-event', { ...envelope(events.at(-1)!), data: { userId: briton, assets: ['BTC'], cooldown: { rule: 'other', features: ['buy'], endsAt: endsAt.toISOString() } } }), /does not match/)
    })

    test('KYC processes: the profile\'s deprecated inputs, hint and warnings, proof of address from identity, form attempts and offboarding', async () => {
      const reference = referenceValidator()
      const ctx = suite.ctx
      const db = ctx.database.db
      const address = { country: 'GB', subdivision: 'GB-MAN', city: 'Manchester', line1: '1 High Street', postalCode: 'M4 1AA' }
      const newUser = async (overrides: Json = {}) => (await ctx.createUser(suite.token, individualUser(overrides))).id
      const patch = async (name: string, process: string, userId: string, payload: Json, status = 200) => {
        reference.request(`update-kyc-${process}-request-body`, payload)
        const response = await ctx.request({ method: 'PATCH', url: `/core/kyc/processes/${process}`, headers: bearer(suite.token, userId), payload })
        assert.equal(response.status, status, response.body)
        reference.response(name, response)
        return response
      }
      const overview = async (userId: string, detailed = '') => {
        const response = await ctx.request({ method: 'GET', url: `/core/kyc${detailed}`, headers: bearer(suite.token, userId) })
        assert.equal(response.status, 200, response.body)
        reference.response('get-kyc-overview-response', response)
        return response.json<{ processes: Record<string, { status: string; type?: string; output?: Json }> }>().processes
      }
      const past = '2024-01-01T00:00:00.000Z'

      // The profile: its hint while pending, the deprecated inputs, the warnings of a field the rules keep.
      const newcomer = await newUser()
      await overview(newcomer, '?detailed=profile,selfCategorizationStatement,cryptoRiskAssessment,customerDueDiligence,taxDetails')
      await patch('update-kyc-profile-response', 'profile', newcomer, { input: { citizenshipCountry: 'GB' } })
      await patch('bad-request', 'profile', newcomer, { input: { details: { fullName: 'John Doe' } } }, 400)
      await patch('update-kyc-profile-response', 'profile', newcomer, { input: { details: { fullName: 'John Doe', birthdate: '1987-01-01', address: { city: 'Manchester', line1: '1 High Street', postalCode: 'M4 1AA' } } } })
      const warned = await patch('update-kyc-profile-response', 'profile', newcomer, { input: { address: { subdivision: 'GB-LND' } } })
      assert.equal(warned.json<{ warnings: { input: { code: string }[] } }>().warnings.input[0]!.code, 'verification_rule_violated')
      await patch('update-kyc-address-conflict-response', 'address', newcomer, { input: { address: { subdivision: 'GB-LND' } } }, 409)
      await patch('update-kyc-phone-response', 'phone', newcomer, { input: { phone: '+447700900001', country: 'GB' }, output: { verifiedAt: past } })

      // Identity: a rejected document still shows what it read; a partner-verified one showing the address proves it.
      const rejected = await newUser({ fullName: 'John Rejected', birthdate: '1987-01-01', address })
      const rejectedFile = await uploadedFile(ctx, suite.token, rejected)
      const failed = await patch('update-kyc-identity-response', 'identity', rejected, { type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId: rejectedFile }] } })
      assert.equal(failed.json<{ identity: { status: string } }>().identity.status, 'failed')
      const derived = await newUser({ fullName: 'John Doe', birthdate: '1987-01-01', address })
      const fileId = await uploadedFile(ctx, suite.token, derived)
      await patch('update-kyc-identity-response', 'identity', derived, {
        type: 'document-submission',
        input: { media: [{ context: 'photo-document-front', fileId }] },
        output: { provider: 'veriff', document: { type: 'driving-license', number: 'DOE99801017JD9AB', country: 'GB' }, person: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', address }, verifiedAt: past },
      })
      const proof = (await overview(derived)).proofOfAddress!
      assert.deepEqual([proof.status, proof.type], ['ok', 'from-identity'])
      reference.schema('kyc-proof-of-address', proof)

      // Forms: a rejection with attempts left (and the wait before the next), a last rejection that offboards.
      const assessed = await newUser()
      const wrong = [
        { 'loss-tolerance': { 'acceptable-loss': 'no_loss' } },
        { 'volatility-understanding': { 'expected-price-behaviour': 'highly_volatile' } },
        { 'regulatory-protection': { 'compensation-coverage': 'no_coverage' } },
        { 'complexity-acknowledgement': { 'product-mechanics': 'complex_and_risky' } },
      ]
      let last: TestResponse | undefined
      for (const answers of wrong) last = await patch('update-kyc-crypto-risk-assessment-response', 'crypto-risk-assessment', assessed, { input: { answers } })
      const retry = last!.json<{ cryptoRiskAssessment: { status: string; output: { attempts: { retryAt?: string } } } }>().cryptoRiskAssessment
      assert.equal(retry.status, 'pending')
      assert.ok(retry.output.attempts.retryAt)
      await patch('update-kyc-crypto-risk-assessment-conflict-response', 'crypto-risk-assessment', assessed, { input: { answers: wrong[0]! } }, 409)
      await db.updateTable('kyc_processes').set({ state: JSON.stringify({ answered: [], attemptsUsed: 4 }), output: null }).where('user_id', '=', assessed).where('code', '=', 'crypto-risk-assessment').execute()
      for (const answers of wrong) last = await patch('update-kyc-crypto-risk-assessment-response', 'crypto-risk-assessment', assessed, { input: { answers } })
      const offboarded = last!.json<{ cryptoRiskAssessment: { status: string; output: { offboard?: Json } } }>().cryptoRiskAssessment
      assert.deepEqual([offboarded.status, Object.keys(offboarded.output.offboard ?? {})], ['failed', ['endsAt']])
      await patch('update-kyc-self-categorization-statement-response', 'self-categorization-statement', assessed, { input: { answers: { investor: { type: 'restricted_investor' } } } })
      await db.updateTable('kyc_processes').set({ state: JSON.stringify({ answered: ['investor'], attemptsUsed: 29 }) }).where('user_id', '=', assessed).where('code', '=', 'self-categorization-statement').execute()
      const profile = { 'invested-less-than-10-percent': 'no', 'invest-less-than-10-percent': 'yes', 'invest-percentage': '5', 'investor-type-confirmation': true }
      await patch('update-kyc-self-categorization-statement-response', 'self-categorization-statement', assessed, { input: { answers: { 'investor-profile': profile } } })
      await db.updateTable('kyc_processes').set({ output: sql`jsonb_set(output, '{offboard,endsAt}', to_jsonb(${past}::text))` }).where('user_id', '=', assessed).where('code', 'in', ['crypto-risk-assessment', 'self-categorization-statement']).execute()
      const done = await overview(assessed)
      assert.equal((done.cryptoRiskAssessment!.output!.offboard as Json).completedAt, past)
      assert.equal(done.selfCategorizationStatement!.status, 'failed')
    })

    test('users: general terms of another residence are the reference\'s terms_of_service_mismatch', async () => {
      const reference = referenceValidator()
      const body = individualUser({ termsOfService: 'general-us-hq' })
      reference.request('create-user-request-body', body)
      const response = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: body })
      assertError(response, 409, 'terms_of_service_mismatch')
      reference.response('create-user-conflict-response', response)
    })

    test('sandbox deposits: the bank deposit answer of every network, with its remitter, and the crypto one', async () => {
      const reference = referenceValidator()
      const ctx = suite.ctx
      const userId = (await ctx.createUser(suite.token, individualUser({ fullName: 'John Doe' }))).id
      const headers = bearer(suite.token, userId)
      const method = async (asset: string, type: string, network: string) => {
        const opened = await ctx.request({ method: 'POST', url: '/core/accounts', headers, payload: { label: `${asset} ${network}`, asset } })
        assert.equal(opened.status, 201, opened.body)
        const accountId = opened.json<{ account: { id: string } }>().account.id
        const response = await ctx.request({ method: 'PUT', url: `/core/accounts/${accountId}/deposit-method?type=${type}&asset=${asset}&network=${network}`, headers })
        assert.equal(response.status, 201, response.body)
        return response.json<{ depositMethod: { details: Record<string, string> } }>().depositMethod.details
      }
      const simulate = async (kind: 'bank' | 'crypto', payload: Json) => {
        reference.request(`simulate-${kind}-deposit-request-body`, payload)
        const response = await ctx.request({ method: 'POST', url: `/core/accounts/test-helpers/${kind}-deposits`, headers, payload })
        assert.equal(response.status, 202, response.body)
        reference.response(`simulate-${kind}-deposit-response`, response)
        return response.json<{ bankDeposit: { remitter?: Json } }>()
      }
      const sepa = await method('EUR', 'bank', 'sepa')
      const fps = await method('GBP', 'bank', 'fps')
      const us = await method('USD', 'bank', 'ach')
      const bodies: Json[] = [
        { network: 'sepa', iban: sepa.iban!, asset: 'EUR', amount: '10', reference: sepa.reference! },
        { network: 'sepa', iban: sepa.iban!, asset: 'EUR', amount: '10', remitter: { name: 'Jane Payer', bic: 'COBADEFFXXX' } },
        { network: 'fps', sortCode: fps.sortCode!, accountNumber: fps.accountNumber!, asset: 'GBP', amount: '10' },
        { network: 'ach', accountNumber: us.accountNumber!, routingNumber: us.routingNumber!, amount: '10', remitter: { secCode: 'PPD' } },
        { network: 'fednow', accountNumber: us.accountNumber!, amount: '10' },
        { network: 'rtp', accountNumber: us.accountNumber!, amount: '10' },
        { network: 'wire', accountNumber: us.accountNumber!, amount: '10' },
        { network: 'wire', accountNumber: us.accountNumber!, amount: '10', remitter: { name: 'Jane Payer', address1: '1 Main Street', idCode: 'X1' } },
      ]
      const names: unknown[] = []
      for (const body of bodies) names.push((await simulate('bank', body)).bankDeposit.remitter?.name)
      assert.deepEqual(names, ['John Doe', 'Jane Payer', 'John Doe', 'John Doe', 'John Doe', 'John Doe', 'John Doe', 'Jane Payer'])
      const btc = await method('BTC', 'crypto', 'bitcoin')
      await simulate('crypto', { network: 'bitcoin', address: btc.address!, asset: 'BTC', amount: '0.001', remitter: { addresses: ['tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'] } })
    })

    test('portfolio: overview, performance (single, _mget, overall), historical balances and their errors', async () => {
      const reference = referenceValidator()
      const ctx = suite.ctx
      const userId = await verifiedUser(ctx, suite.token)
      const usd = await openAccount(ctx, suite.token, userId, 'USD')
      const btc = await openAccount(ctx, suite.token, userId, 'BTC')
      await fund(ctx, userId, usd, 'USD', '5000')
      const quote = await quoted(ctx, suite.token, userId, { origin: { type: 'account', id: usd }, destination: { type: 'account', id: btc }, denomination: { asset: 'USD', amount: '1000', target: 'origin' } })
      assert.equal((await commit(ctx, suite.token, userId, quote.id)).status, 201)
      await ctx.services.worker.drain()
      const call = async (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) => {
        const response = await ctx.request({ method, url, headers: bearer(suite.token, userId), ...(payload === undefined ? {} : { payload }) })
        return response
      }
      const ok = async (name: string, method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) => {
        const response = await call(method, url, payload)
        assert.equal(response.status, 200, response.body)
        reference.response(name, response)
      }
      await ok('get-portfolio-overview-response', 'GET', '/core/portfolio?includeBase=true')
      await ok('get-portfolio-performance-response', 'GET', '/core/portfolio/performance')
      await ok('get-portfolio-account-performance-response', 'GET', `/core/portfolio/accounts/${btc}/performance?interval=all-time`)
      await ok('get-portfolio-asset-performance-response', 'GET', '/core/portfolio/assets/BTC/performance?denomination=EUR')
      await ok('get-portfolio-many-accounts-performance-response', 'POST', '/core/portfolio/accounts/_mget/performance', { ids: [btc, usd] })
      await ok('get-portfolio-many-assets-performance-response', 'POST', '/core/portfolio/assets/_mget/performance?interval=one-hour', { codes: ['BTC', 'USD'] })
      await ok('get-portfolio-historical-balance-response', 'GET', '/core/portfolio/historical-balance?interval=one-week')
      await ok('get-portfolio-asset-historical-balance-response', 'GET', '/core/portfolio/assets/BTC/historical-balance?includeBase=true')
      await ok('get-portfolio-account-historical-balance-response', 'GET', `/core/portfolio/accounts/${btc}/historical-balance?interval=one-year&includeBase=true`)
      // Statements of a past month, over generated history.
      const historian = await verifiedUser(ctx, suite.token)
      const generated = await ctx.request({ method: 'POST', url: '/core/portfolio/test-helpers/history', headers: bearer(suite.token, historian), payload: { months: 2, seed: 3 } })
      assert.equal(generated.status, 201, generated.body)
      const previous = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 1))
      const period = `period=one-month&year=${previous.getUTCFullYear()}&month=${previous.getUTCMonth() + 1}`
      for (const [name, url] of [['get-portfolio-statement-response', `/core/statements/portfolio?${period}&denomination=EUR`], ['get-transactions-statement-response', `/core/statements/transactions?${period}`]] as const) {
        const response = await ctx.request({ method: 'GET', url, headers: bearer(suite.token, historian) })
        assert.equal(response.status, 200, response.body)
        reference.response(name, response)
      }
      for (const [name, url] of [
        ['get-portfolio-overview-not-found-response', '/core/portfolio?denomination=NOPE'],
        ['get-portfolio-account-performance-not-found-response', `/core/portfolio/accounts/${randomUuid()}/performance`],
        ['get-portfolio-asset-historical-balance-not-found-response', '/core/portfolio/assets/NOPE/historical-balance'],
        ['get-portfolio-performance-conflict-response', '/core/portfolio/performance?denomination=BUSD'],
        ['get-portfolio-statement-conflict-response', `/core/statements/portfolio?period=one-month&year=${new Date().getUTCFullYear()}&month=${new Date().getUTCMonth() + 1}`],
        ['get-transactions-statement-conflict-response', `/core/statements/transactions?period=one-month&year=${new Date().getUTCFullYear()}&month=${new Date().getUTCMonth() + 1}`],
      ] as const) {
        const response = await call('GET', url)
        assert.ok(response.status === 404 || response.status === 409, response.body)
        reference.response(name, response)
      }
    })
  })
}

function randomUuid(): string {
  const hex = randomBytes(16).toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}
