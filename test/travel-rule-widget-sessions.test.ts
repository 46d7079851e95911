/**
 * Travel-rule widget sessions through the HTTP API (src/modules/widgets/travel-rule-sessions.*): creating them for a
 * held deposit (by request or by transaction) and for a withdrawal quote, the 404s and 409s, validation, what their
 * token may do (its user, its one request, the two widget operations, nothing else), the current session and the
 * answer the hosted page sends, the sandbox travel-rule node the page talks to (its customer token), and the hosted
 * page itself. Every response of the API is checked against the generated OpenAPI document by `ctx.request`; the
 * node and the page are not part of that document and are reached with `app.inject`.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, test } from 'node:test'
import { SANDBOX_VASP, SANDBOX_VASP_ADDRESSES } from '../src/providers/travel-rule/sandbox.ts'
import { bearer, ENGINES, individualUser, testConfig, useApp, type TestContext, type TestResponse } from './helpers.ts'
import { assertError, commit, fund, openAccount, quoted, transactionOf, verifiedUser, type Quote, type RequestForInformation } from './money.ts'
import { signMessage, testKeys } from './signing.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'

const SESSIONS = '/widgets/travel-rule/sessions'
const CURRENT = '/widgets/travel-rule/sessions/current'
const ANSWER = '/widgets/travel-rule/sessions/current/request-for-information'
const NODE = '/sandbox/travel-rule-node'
const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'
const SESSION_SCOPES = ['core.transactions.requests-for-information:read', 'core.transactions.requests-for-information:update']
/** A sender on the sandbox's bitcoin test chain that nobody declared. */
const SENDER = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
/** BIP-173's P2WSH test vector on the test chain: a destination nobody can sign for. */
const DESTINATION = 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7'
/** A wallet of the test key (test/signing.ts): the user can sign with it. */
const OWN_WALLET = testKeys.primary.addresses.bitcoin.test.p2wpkh
const EXCHANGE_WALLET = SANDBOX_VASP_ADDRESSES.bitcoin![0]!

const originator = (primary: string, secondary?: string) => ({
  ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: primary, ...(secondary ? { secondaryIdentifier: secondary } : {}), nameIdentifierType: 'LEGL' }] } } }] } },
})
const beneficiary = (name: string) => ({ ivms101: { beneficiary: { beneficiaryPersons: [{ legalPerson: { name: { nameIdentifier: [{ legalPersonName: name, legalPersonNameIdentifierType: 'LEGL' }] } } }] } } })

interface Session {
  flow: string
  url: string
  token: string
  data: {
    provider: string
    parameters: {
      init: { authToken: string; nodeUrl: string }
      options: { proofs: { fallbacks: string[]; reuseProof: boolean; deminimis: { currency: string; proofTypes: string[]; threshold: number } }; theme?: Record<string, unknown> }
      transaction: Record<string, unknown>
    }
  }
}

type Rfi = RequestForInformation

interface Current {
  session: { flow: string; data: Session['data']; expiresAt: string; domain?: string }
  requestForInformation: Rfi
  messageToSign: string
}

/** The claims of a JWT, read without checking anything (the service checks them). */
function claimsOf(token: string): Record<string, unknown> {
  const [, payload] = token.split('.')
  assert.ok(payload, 'a JWT')
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
}

for (const engine of ENGINES) {
  describe(`travel-rule widget sessions [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '0' })
    const ctx = (): TestContext => suite.ctx

    async function btcHolder(token = suite.token): Promise<{ userId: string; btc: string }> {
      const userId = await verifiedUser(ctx(), token)
      return { userId, btc: await openAccount(ctx(), token, userId, 'BTC') }
    }

    /** A crypto deposit from `sender` at a value the travel rule holds: on hold, with one pending request. */
    async function heldDeposit(userId: string, accountId: string, options: { amount?: string; sender?: string; organizationId?: string } = {}): Promise<{ transactionId: string; requestId: string }> {
      const { transactionId } = await ctx().services.deposits.record(ctx().database.db, {
        organizationId: options.organizationId ?? ctx().client.organizationId,
        userId,
        accountId,
        asset: 'BTC',
        amount: options.amount ?? '0.1',
        network: 'bitcoin',
        source: { type: 'crypto-address', network: 'bitcoin', address: options.sender ?? SENDER },
        reference: `chain-${randomBytes(8).toString('hex')}`,
      })
      await ctx().services.worker.drain()
      const principal = { organizationId: options.organizationId ?? ctx().client.organizationId, clientId: 'test', scopes: new Set<string>(), subject: 'user:individual' as const, userId }
      const [request] = await ctx().services.requestsForInformation.list(principal, transactionId)
      assert.ok(request, 'the deposit was held for information')
      return { transactionId, requestId: request.id }
    }

    const withdrawalBody = (btc: string, amount: string, address = DESTINATION) => ({
      origin: { type: 'account', id: btc },
      destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address },
      denomination: { asset: 'BTC', amount },
    })

    /** A funded BTC holder and a withdrawal quote that carries the travel-rule requirement. */
    async function withdrawalQuote(address = DESTINATION, extra: Record<string, unknown> = {}): Promise<{ userId: string; btc: string; quote: Quote }> {
      const { userId, btc } = await btcHolder()
      await fund(ctx(), userId, btc, 'BTC', '1')
      const quote = await quoted(ctx(), suite.token, userId, { ...withdrawalBody(btc, '0.1', address), ...extra })
      assert.deepEqual(quote.requirements, ['travel-rule'])
      return { userId, btc, quote }
    }

    const create = (userId: string | undefined, body: unknown, token = suite.token) =>
      ctx().request({ method: 'POST', url: SESSIONS, headers: bearer(token, userId), payload: body as Record<string, unknown> })

    async function session(userId: string, body: Record<string, unknown>, token = suite.token): Promise<Session> {
      const response = await create(userId, body, token)
      assert.equal(response.status, 201, response.body)
      return response.json<{ session: Session }>().session
    }

    const current = (token: string) => ctx().request({ method: 'GET', url: CURRENT, headers: bearer(token) })
    const answer = (token: string, payload: unknown) => ctx().request({ method: 'PUT', url: ANSWER, headers: bearer(token), payload: payload as Record<string, unknown> })

    async function rfi(userId: string, transactionId: string, id: string): Promise<Rfi> {
      const response = await ctx().request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information/${id}`, headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ requestForInformation: Rfi }>().requestForInformation
    }

    async function me(userId: string): Promise<{ fullName?: string }> {
      const response = await ctx().request({ method: 'GET', url: '/core/users/me', headers: bearer(suite.token, userId) })
      return response.json<{ user: { fullName?: string } }>().user
    }

    // --- Creating sessions ---------------------------------------------------------------------------------------

    describe('POST /widgets/travel-rule/sessions', () => {
      test('deposit-form by request: the hosted page, the node to talk to, the movement, and a token bound to this request', async () => {
        const { userId, btc } = await btcHolder()
        const { requestId } = await heldDeposit(userId, btc)
        const response = await create(userId, { flow: 'deposit-form', data: { requestForInformationId: requestId } })
        assert.equal(response.status, 201, response.body)
        const created = response.json<{ session: Session }>().session
        assert.deepEqual(Object.keys(created).sort(), ['data', 'flow', 'token', 'url'])
        assert.equal(created.flow, 'deposit-form')
        assert.equal(created.url, `${ctx().config.publicUrl}/hosted/travel-rule-widget/`)
        assert.equal(created.data.provider, 'notabene')
        const { init, options, transaction } = created.data.parameters
        assert.equal(init.nodeUrl, `${ctx().config.publicUrl}/sandbox/travel-rule-node`)
        assert.ok(init.authToken.length > 20)
        assert.deepEqual(options, { proofs: { fallbacks: ['self-declaration'], reuseProof: true, deminimis: { currency: 'USD', proofTypes: ['self-declaration'], threshold: 1000 } } })
        const { assetPrice, ...movement } = transaction as typeof transaction & { assetPrice?: { price: number; currency: string } }
        assert.deepEqual(movement, {
          amountDecimal: 0.1,
          asset: 'BTC',
          network: 'bitcoin',
          customer: { name: (await me(userId)).fullName ?? '', type: 'natural' },
          source: [SENDER],
          requestForInformation: { id: requestId },
        })
        // The price now, so that the widget weighs the movement against the deminimis before asking.
        assert.equal(assetPrice?.currency, 'USD')
        assert.ok(assetPrice.price > 1000, JSON.stringify(assetPrice))

        const claims = claimsOf(created.token)
        assert.equal(claims.user_id, userId)
        assert.deepEqual(claims.widget, { kind: 'travel-rule', flow: 'deposit-form', requestForInformationId: requestId })
        assert.deepEqual(String(claims.scope).split(' ').sort(), SESSION_SCOPES)
        assert.equal(claims.organization_id, ctx().client.organizationId)
        assert.equal(Number(claims.exp) - Number(claims.iat), ctx().config.widgetSessionTtlSeconds)
      })

      test('deposit-form by transaction (the specification\'s data.transactionId): the same request; a domain and a theme are kept', async () => {
        const { userId, btc } = await btcHolder()
        const { transactionId, requestId } = await heldDeposit(userId, btc)
        const created = await session(userId, { flow: 'deposit-form', data: { transactionId, domain: 'Shop.Example.com' }, options: { theme: { appearance: 'dark' } } })
        assert.deepEqual(created.data.parameters.transaction.requestForInformation, { id: requestId })
        assert.deepEqual(created.data.parameters.options.theme, { appearance: 'dark' })
        assert.deepEqual(claimsOf(created.token).widget, { kind: 'travel-rule', flow: 'deposit-form', requestForInformationId: requestId, domain: 'shop.example.com' })
        const read = (await current(created.token)).json<Current>()
        assert.equal(read.session.domain, 'shop.example.com')
        // Upper-case ids are the same ids.
        const upper = await session(userId, { flow: 'deposit-form', data: { transactionId: transactionId.toUpperCase() } })
        assert.equal(claimsOf(upper.token).widget && (claimsOf(upper.token).widget as { requestForInformationId: string }).requestForInformationId, requestId)
      })

      test('withdrawal-form: a request opened for the quote before it is executed (the same one on a second session), the destination described', async () => {
        const { userId, quote } = await withdrawalQuote()
        const created = await session(userId, { flow: 'withdrawal-form', data: { quoteId: quote.id } })
        assert.equal(created.flow, 'withdrawal-form')
        const { transaction } = created.data.parameters
        assert.equal(transaction.destination, DESTINATION)
        assert.equal(transaction.source, undefined)
        assert.equal(transaction.amountDecimal, Number(quote.destination.amount))
        const claims = claimsOf(created.token)
        const widget = claims.widget as { requestForInformationId: string; quoteId: string }
        assert.equal(widget.quoteId, quote.id)
        const read = (await current(created.token)).json<Current>()
        assert.equal(read.requestForInformation.id, widget.requestForInformationId)
        assert.equal(read.requestForInformation.status, 'pending')
        assert.deepEqual(read.requestForInformation.context, { direction: 'withdrawal', party: 'beneficiary', network: 'bitcoin', asset: 'BTC', amount: quote.destination.amount, addresses: [DESTINATION] })
        const again = await session(userId, { flow: 'withdrawal-form', data: { quoteId: quote.id.toUpperCase() } })
        assert.equal((claimsOf(again.token).widget as { requestForInformationId: string }).requestForInformationId, widget.requestForInformationId)
      })

      test('404: another user\'s or organization\'s request, transaction or quote; unknown ids; an executed or expired quote', async () => {
        const { userId, btc } = await btcHolder()
        const { transactionId, requestId } = await heldDeposit(userId, btc)
        const { userId: withdrawer, quote } = await withdrawalQuote()
        const neighbour = await verifiedUser(ctx(), suite.token)
        const otherToken = await ctx().token(await ctx().newClient())
        const stranger = await verifiedUser(ctx(), otherToken)
        for (const [who, token] of [[neighbour, suite.token], [stranger, otherToken]] as const) {
          assert.deepEqual(assertError(await create(who, { flow: 'deposit-form', data: { requestForInformationId: requestId } }, token), 404, 'entity_not_found'), { context: 'body', property: 'data.requestForInformationId', entity: 'request-for-information' })
          assert.equal(assertError(await create(who, { flow: 'deposit-form', data: { transactionId } }, token), 404, 'entity_not_found')?.entity, 'transaction')
          assert.deepEqual(assertError(await create(who, { flow: 'withdrawal-form', data: { quoteId: quote.id } }, token), 404, 'entity_not_found'), { context: 'body', property: 'data.quoteId', entity: 'quote' })
        }
        assert.equal(assertError(await create(userId, { flow: 'deposit-form', data: { requestForInformationId: UNKNOWN_ID } }), 404, 'entity_not_found')?.entity, 'request-for-information')
        assert.equal(assertError(await create(userId, { flow: 'deposit-form', data: { transactionId: UNKNOWN_ID } }), 404, 'entity_not_found')?.entity, 'transaction')
        assert.equal(assertError(await create(userId, { flow: 'withdrawal-form', data: { quoteId: UNKNOWN_ID } }), 404, 'entity_not_found')?.entity, 'quote')
        // A deposit-form with neither id (the schema wants at least one property: a domain alone passes it).
        assert.equal(assertError(await create(userId, { flow: 'deposit-form', data: { domain: 'shop.example' } }), 404, 'entity_not_found')?.entity, 'request-for-information')

        // Executed: the quote cannot be described any more through a new session.
        const executed = await commit(ctx(), suite.token, withdrawer, quote.id)
        assert.equal(executed.status, 201, executed.body)
        assert.equal(assertError(await create(withdrawer, { flow: 'withdrawal-form', data: { quoteId: quote.id } }), 404, 'entity_not_found')?.entity, 'quote')
        // Expired.
        const { userId: late, btc: lateBtc } = await btcHolder()
        await fund(ctx(), late, lateBtc, 'BTC', '1')
        const short = await quoted(ctx(), suite.token, late, { ...withdrawalBody(lateBtc, '0.1'), ttl: 1000 })
        await sleep(Math.max(0, Date.parse(short.expiresAt) - Date.now()) + 50)
        assert.equal(assertError(await create(late, { flow: 'withdrawal-form', data: { quoteId: short.id } }), 404, 'entity_not_found')?.entity, 'quote')
      })

      test('409: a quote without the travel-rule requirement, an answered request, a withdrawal\'s request given to deposit-form', async () => {
        const { userId, btc } = await btcHolder()
        await fund(ctx(), userId, btc, 'BTC', '1')
        // 0.001 BTC is worth about 65 US dollars in the sandbox: below the threshold.
        const small = await quoted(ctx(), suite.token, userId, withdrawalBody(btc, '0.001'))
        assert.deepEqual(small.requirements, [])
        const refused = await create(userId, { flow: 'withdrawal-form', data: { quoteId: small.id } })
        assert.deepEqual(assertError(refused, 409, 'operation_not_allowed'), { reasons: ['quote-missing-travel-rule-requirement'] })
        assert.equal(refused.json<{ message: string }>().message, 'The quote does not require travel rule')
        // A trade quote is no withdrawal either.
        const eur = await openAccount(ctx(), suite.token, userId, 'EUR')
        const trade = await quoted(ctx(), suite.token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'account', id: eur }, denomination: { asset: 'BTC', amount: '0.1' } })
        assert.deepEqual(assertError(await create(userId, { flow: 'withdrawal-form', data: { quoteId: trade.id } }), 409, 'operation_not_allowed'), { reasons: ['quote-missing-travel-rule-requirement'] })

        // A request answered (through the API): no new session for it.
        const { transactionId, requestId } = await heldDeposit(userId, btc)
        const answered = await ctx().request({ method: 'PUT', url: `/core/transactions/${transactionId}/requests-for-information/${requestId}`, headers: bearer(suite.token, userId), payload: { data: originator('Doe') } })
        assert.equal(answered.status, 200, answered.body)
        for (const data of [{ requestForInformationId: requestId }, { transactionId }]) {
          assert.deepEqual(assertError(await create(userId, { flow: 'deposit-form', data }), 409, 'operation_not_allowed'), { reasons: ['request-for-information-update-not-allowed'] })
        }

        // A withdrawal form's request is not a deposit's.
        const quote = await quoted(ctx(), suite.token, userId, withdrawalBody(btc, '0.1'))
        const withdrawal = await session(userId, { flow: 'withdrawal-form', data: { quoteId: quote.id } })
        const withdrawalRequest = (claimsOf(withdrawal.token).widget as { requestForInformationId: string }).requestForInformationId
        assert.deepEqual(assertError(await create(userId, { flow: 'deposit-form', data: { requestForInformationId: withdrawalRequest } }), 409, 'operation_not_allowed'), { reasons: ['request-for-information-not-a-deposit'] })
        // Answered through its widget, the withdrawal form is done too.
        assert.equal((await answer(withdrawal.token, { data: beneficiary('Acme Ltd') })).status, 200)
        assert.deepEqual(assertError(await create(userId, { flow: 'withdrawal-form', data: { quoteId: quote.id } }), 409, 'operation_not_allowed'), { reasons: ['request-for-information-update-not-allowed'] })
      })

      test('400 request_invalid with violations: unknown flow, missing or malformed data', async () => {
        const { userId } = await btcHolder()
        // Where two flows fail equally (a withdrawal form whose quote id is malformed fails the deposit form's `flow`
        // as much), the violations name the first flow's: either property tells the client what to fix.
        const cases: [unknown, string[]][] = [
          [{}, ['flow', 'data']],
          [{ flow: 'travel-form', data: { quoteId: UNKNOWN_ID } }, ['flow']],
          [{ flow: 'deposit-form' }, ['data']],
          [{ flow: 'deposit-form', data: {} }, ['data']],
          [{ flow: 'deposit-form', data: { requestForInformationId: 'not-a-uuid' } }, ['data.requestForInformationId']],
          [{ flow: 'deposit-form', data: { transactionId: 42 } }, ['data.transactionId']],
          [{ flow: 'withdrawal-form', data: {} }, ['data.quoteId']],
          [{ flow: 'withdrawal-form', data: { quoteId: 'soon' } }, ['data.quoteId', 'flow']],
          [{ flow: 'withdrawal-form', data: { quoteId: UNKNOWN_ID, domain: 'not a host' } }, ['data.domain', 'flow']],
        ]
        for (const [body, properties] of cases) {
          const details = assertError(await create(userId, body), 400, 'request_invalid') as { context: string; violations: { property: string; rule: string }[] }
          assert.equal(details.context, 'body', JSON.stringify(body))
          assert.ok(details.violations.length > 0 && details.violations.every((violation) => properties.includes(violation.property)), `${JSON.stringify(body)}: ${JSON.stringify(details.violations)}`)
        }
      })

      test('the session holds only the scopes its client has: without the update scope it reads, and cannot answer', async () => {
        const { userId, btc } = await btcHolder()
        const { requestId } = await heldDeposit(userId, btc)
        const narrow = await ctx().newClient('widgets.travel-rule.sessions:create core.users:act-on-behalf-of core.transactions.requests-for-information:read', ctx().client.organizationId)
        const created = await session(userId, { flow: 'deposit-form', data: { requestForInformationId: requestId } }, await ctx().token(narrow))
        assert.deepEqual(String(claimsOf(created.token).scope).split(' '), ['core.transactions.requests-for-information:read'])
        assert.equal((await current(created.token)).status, 200)
        assertError(await answer(created.token, { data: originator('Doe') }), 403, 'token_insufficient_scopes')
        // And a client without the create scope gets no session.
        const none = await ctx().newClient('core.users:act-on-behalf-of', ctx().client.organizationId)
        assertError(await create(userId, { flow: 'deposit-form', data: { requestForInformationId: requestId } }, await ctx().token(none)), 403, 'token_insufficient_scopes')
      })
    })

    // --- The session's token -------------------------------------------------------------------------------------

    describe('the session token', () => {
      test('GET current: the session, its request and the message to sign; only a travel-rule session\'s token reaches it', async () => {
        const { userId, btc } = await btcHolder()
        const { requestId } = await heldDeposit(userId, btc)
        const created = await session(userId, { flow: 'deposit-form', data: { requestForInformationId: requestId } })
        const response = await current(created.token)
        assert.equal(response.status, 200, response.body)
        const body = response.json<Current>()
        assert.equal(body.session.flow, 'deposit-form')
        assert.equal(body.session.domain, undefined)
        assert.equal(new Date(body.session.expiresAt).getTime(), Number(claimsOf(created.token).exp) * 1000)
        assert.deepEqual({ ...body.session.data, parameters: { ...body.session.data.parameters, init: undefined } }, { ...created.data, parameters: { ...created.data.parameters, init: undefined } })
        assert.equal(body.requestForInformation.id, requestId)
        assert.equal(body.requestForInformation.status, 'pending')
        assert.equal(body.messageToSign, `I confirm that I control the address ${SENDER} on bitcoin. Request ${requestId}.`)

        // The client's own token, acting for the user, is no session: 404.
        assert.deepEqual(assertError(await ctx().request({ method: 'GET', url: CURRENT, headers: bearer(suite.token, userId) }), 404, 'entity_not_found'), { entity: 'session' })
        // Nor is a payment widget's.
        const payment = await ctx().request({ method: 'POST', url: '/widgets/payment/sessions', headers: bearer(suite.token, userId), payload: { flow: 'select-for-deposit' } })
        const paymentToken = payment.json<{ session: { token: string } }>().session.token
        assert.deepEqual(assertError(await current(paymentToken), 404, 'entity_not_found'), { entity: 'session' })
        assertError(await answer(paymentToken, { data: originator('Doe') }), 403, 'token_insufficient_scopes')
        // And this session's token is none of the other widgets' sessions.
        assert.deepEqual(assertError(await ctx().request({ method: 'GET', url: '/widgets/payment/sessions/current', headers: bearer(created.token) }), 404, 'entity_not_found'), { entity: 'session' })
        assertError(await ctx().request({ method: 'GET', url: '/widgets/kyc/sessions/current', headers: bearer(created.token) }), 403, 'token_insufficient_scopes')
        // No token, a forged one, an expired one.
        assertError(await ctx().request({ method: 'GET', url: CURRENT }), 401, 'token_invalid')
        assertError(await current(`${created.token.slice(0, -4)}AAAA`), 401, 'token_invalid')
        const expired = await ctx().services.signer.sign({ clientId: ctx().client.clientId, organizationId: ctx().client.organizationId, scopes: SESSION_SCOPES, ttlSeconds: -60, userId, widget: { kind: 'travel-rule', flow: 'deposit-form', requestForInformationId: requestId } })
        assertError(await current(expired), 401, 'token_expired')
        assertError(await answer(expired, { data: originator('Doe') }), 401, 'token_expired')
      })

      test('it reaches its own request only, and no other operation (403), whatever the headers say', async () => {
        const { userId, btc } = await btcHolder()
        const first = await heldDeposit(userId, btc)
        const second = await heldDeposit(userId, btc)
        const created = await session(userId, { flow: 'deposit-form', data: { transactionId: first.transactionId } })
        const token = created.token
        for (const [method, url] of [
          ['GET', `/core/transactions/${first.transactionId}`],
          ['GET', `/core/transactions/${first.transactionId}/requests-for-information`],
          ['GET', `/core/transactions/${first.transactionId}/requests-for-information/${first.requestId}`],
          ['PUT', `/core/transactions/${second.transactionId}/requests-for-information/${second.requestId}`],
          ['POST', SESSIONS],
          ['GET', '/core/users/me'],
          ['GET', '/core/accounts'],
          ['POST', '/core/transactions/quote'],
        ] as const) {
          const payload = method === 'GET' ? {} : { payload: method === 'PUT' ? { data: originator('Doe') } : { flow: 'deposit-form', data: { transactionId: second.transactionId } } }
          assertError(await ctx().request({ method, url, headers: bearer(token), ...payload }), 403, 'token_insufficient_scopes')
        }
        // Acting for another user through it: that user does not exist for the session.
        const neighbour = (await ctx().createUser(suite.token, individualUser())).id
        assert.deepEqual(assertError(await ctx().request({ method: 'GET', url: CURRENT, headers: bearer(token, neighbour) }), 404, 'entity_not_found'), { entity: 'user' })
        assert.equal((await ctx().request({ method: 'GET', url: CURRENT, headers: bearer(token, userId) })).status, 200)

        // Its answer goes to its own request; the other stays pending.
        const answered = await answer(token, { data: originator('Lovelace', 'Ada') })
        assert.equal(answered.status, 200, answered.body)
        assert.equal(answered.json<{ requestForInformation: Rfi }>().requestForInformation.id, first.requestId)
        assert.equal((await rfi(userId, first.transactionId, first.requestId)).status, 'ok')
        assert.equal((await rfi(userId, second.transactionId, second.requestId)).status, 'pending')

      })

      test('PUT answers through the widget path: violations (400), proofs refused (409), accepted; the deposit is then released', async () => {
        const { userId, btc } = await btcHolder()
        const { transactionId, requestId } = await heldDeposit(userId, btc, { sender: OWN_WALLET })
        const created = await session(userId, { flow: 'deposit-form', data: { requestForInformationId: requestId } })
        const token = created.token
        const cases: [unknown, string][] = [
          [{}, 'data'],
          [{ data: {} }, 'data'],
          [{ data: beneficiary('Acme') }, 'data.ivms101.originator.originatorPersons'],
          [{ data: { originatorEqualsBeneficiary: true } }, 'data.proof'],
          [{ data: { originatorEqualsBeneficiary: true, proof: { type: 'bip-322', address: OWN_WALLET } } }, 'data.proof.attestation'],
        ]
        for (const [payload, property] of cases) {
          const details = assertError(await answer(token, payload), 400, 'request_invalid') as { context: string; violations: { property: string }[] }
          assert.equal(details.context, 'body')
          assert.ok(details.violations.some((violation) => violation.property === property), `${JSON.stringify(payload)}: ${JSON.stringify(details.violations)}`)
        }
        const { messageToSign } = (await current(token)).json<Current>()
        // 0.1 BTC is above the self-declaration's limit.
        const declared = await answer(token, { data: { originatorEqualsBeneficiary: true, proof: { type: 'self-declaration', confirmed: true } } })
        assert.deepEqual(assertError(declared, 409, 'operation_not_allowed'), { reasons: ['signature-proof-required'] })
        const wrong = signMessage({ family: 'bitcoin', chain: 'test', message: 'Another message' })
        const forged = await answer(token, { data: { originatorEqualsBeneficiary: true, proof: { type: 'bip-322', address: OWN_WALLET, attestation: messageToSign, proof: wrong.signature } } })
        assert.deepEqual(assertError(forged, 409, 'operation_not_allowed'), { reasons: ['proof-invalid'], reason: 'signature-mismatch' })
        const elsewhere = await answer(token, { data: { originatorEqualsBeneficiary: true, proof: { type: 'bip-322', address: DESTINATION, attestation: messageToSign, proof: wrong.signature } } })
        assert.deepEqual(assertError(elsewhere, 409, 'operation_not_allowed'), { reasons: ['proof-invalid'], reason: 'address-mismatch' })
        assert.equal((await rfi(userId, transactionId, requestId)).status, 'pending')

        const signed = signMessage({ family: 'bitcoin', chain: 'test', message: messageToSign })
        const data = { originatorEqualsBeneficiary: true, proof: { type: 'bip-322', address: OWN_WALLET, attestation: messageToSign, proof: signed.signature } }
        const accepted = await answer(token, { data })
        assert.equal(accepted.status, 200, accepted.body)
        const request = accepted.json<{ requestForInformation: Rfi }>().requestForInformation
        assert.equal(request.status, 'ok')
        assert.deepEqual(request.data, data)
        assert.equal((await current(token)).json<Current>().requestForInformation.status, 'ok')
        assert.deepEqual(assertError(await answer(token, { data: originator('Doe') }), 409, 'operation_not_allowed'), { reasons: ['request-for-information-update-not-allowed'] })
        await ctx().services.worker.drain()
        assert.equal((await transactionOf(ctx(), suite.token, userId, transactionId)).status, 'completed')
      })

      test('PUT with a party the network refuses: the request fails (200, status failed), and so does the deposit', async () => {
        const { userId, btc } = await btcHolder()
        const { transactionId } = await heldDeposit(userId, btc)
        const created = await session(userId, { flow: 'deposit-form', data: { transactionId } })
        const response = await answer(created.token, { data: originator('Refused', 'Rita') })
        assert.equal(response.status, 200, response.body)
        const request = response.json<{ requestForInformation: Rfi }>().requestForInformation
        assert.equal(request.status, 'failed')
        assert.deepEqual(request.statusDetails, { reason: 'counterparty-refused' })
        await ctx().services.worker.drain()
        const failed = await transactionOf(ctx(), suite.token, userId, transactionId)
        assert.equal(failed.status, 'failed')
        assert.deepEqual(failed.statusDetails, { reason: 'travel-rule-verification-failed' })
        // A name with "unavailable" finds the node down: 503, and nothing changes.
        const other = await heldDeposit(userId, btc)
        const retry = await session(userId, { flow: 'deposit-form', data: { transactionId: other.transactionId } })
        const down = await answer(retry.token, { data: originator('Unavailable') })
        assertError(down, 503, 'service_unavailable')
        assert.equal((await rfi(userId, other.transactionId, other.requestId)).status, 'pending')
      })

      test('withdrawal-form answered before the quote is executed: the withdrawal is not held and completes', async () => {
        const { userId, quote } = await withdrawalQuote(EXCHANGE_WALLET)
        const created = await session(userId, { flow: 'withdrawal-form', data: { quoteId: quote.id } })
        const requestId = (claimsOf(created.token).widget as { requestForInformationId: string }).requestForInformationId
        // A deposit's originator does not describe a withdrawal's beneficiary.
        assertError(await answer(created.token, { data: originator('Doe') }), 400, 'request_invalid')
        const response = await answer(created.token, { data: beneficiary('Acme Exchange Customer Ltd') })
        assert.equal(response.status, 200, response.body)
        assert.equal(response.json<{ requestForInformation: Rfi }>().requestForInformation.status, 'ok')
        const executed = await commit(ctx(), suite.token, userId, quote.id)
        assert.equal(executed.status, 201, executed.body)
        const id = executed.json<{ transaction: { id: string } }>().transaction.id
        await ctx().services.worker.drain()
        assert.equal((await transactionOf(ctx(), suite.token, userId, id)).status, 'completed')
        const statuses = await ctx().database.db.selectFrom('outbox_events').select('data').where('subject_id', '=', id).orderBy('id').execute()
        assert.ok(!statuses.some((row) => (row.data as { transaction: { status: string } }).transaction.status === 'on-hold'), 'never held')
        const bound = await rfi(userId, id, requestId)
        assert.equal(bound.status, 'ok')
      })
    })

    // --- The sandbox travel-rule node ----------------------------------------------------------------------------

    describe('the sandbox travel-rule node', () => {
      const node = (method: 'GET' | 'POST', path: string, authorization?: string, payload?: Record<string, unknown>) =>
        ctx().app.inject({ method, url: `${NODE}${path}`, headers: authorization === undefined ? {} : { authorization }, ...(payload ? { payload } : {}) })
      const transfer = (counterparty: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
        direction: 'deposit',
        network: 'bitcoin',
        asset: 'BTC',
        amountDecimal: 0.1,
        address: EXCHANGE_WALLET,
        customer: { name: 'Ada Lovelace', type: 'natural' },
        counterparty,
        ...extra,
      })

      async function authToken(): Promise<{ authToken: string; userId: string; sessionToken: string }> {
        const { userId, btc } = await btcHolder()
        const { transactionId } = await heldDeposit(userId, btc)
        const created = await session(userId, { flow: 'deposit-form', data: { transactionId } })
        return { authToken: created.data.parameters.init.authToken, userId, sessionToken: created.token }
      }

      test('with the session\'s authToken: the directory, and the description of a transfer that answers the request', async () => {
        const { authToken: token } = await authToken()
        const known = await node('GET', `/addresses/bitcoin/${EXCHANGE_WALLET}`, `Bearer ${token}`)
        assert.equal(known.statusCode, 200, known.body)
        assert.deepEqual(known.json(), { network: 'bitcoin', address: EXCHANGE_WALLET, vasp: SANDBOX_VASP })
        const unknown = await node('GET', `/addresses/bitcoin/${SENDER}`, `Bearer ${token}`)
        assert.deepEqual(unknown.json(), { network: 'bitcoin', address: SENDER, vasp: null })

        const person = await node('POST', '/transfers/validate', `Bearer ${token}`, transfer({ type: 'natural', firstName: 'Grace', lastName: 'Hopper' }))
        assert.equal(person.statusCode, 200, person.body)
        const described = person.json<Record<string, unknown>>()
        assert.equal(described.valid, true)
        assert.equal(described.originatorEqualsBeneficiary, false)
        assert.equal(described.originatorVASPdid, SANDBOX_VASP.did)
        assert.deepEqual(described.ivms101, { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: 'Hopper', secondaryIdentifier: 'Grace', nameIdentifierType: 'LEGL' }] } } }] } })

        const self = await node('POST', '/transfers/validate', `Bearer ${token}`, transfer({ type: 'self' }))
        assert.equal(self.json<{ valid: boolean; errors: string[] }>().valid, false, 'the user\'s own wallet needs a proof')
        const declared = await node('POST', '/transfers/validate', `Bearer ${token}`, transfer({ type: 'self' }, { proof: { type: 'self-declaration', confirmed: true } }))
        assert.deepEqual(declared.json<{ proof: unknown }>().proof, { type: 'self-declaration', confirmed: true, address: EXCHANGE_WALLET })
        // A user Tessera knows no name for: no person is described, the proof does.
        const nameless = await node('POST', '/transfers/validate', `Bearer ${token}`, transfer({ type: 'self' }, { customer: { name: '', type: 'natural' }, proof: { type: 'self-declaration', confirmed: true } }))
        assert.equal(nameless.json<{ ivms101?: unknown }>().ivms101, undefined)

        const invalid = await node('POST', '/transfers/validate', `Bearer ${token}`, transfer({ type: 'natural', firstName: '' }))
        assert.equal(invalid.statusCode, 400, invalid.body)
        assert.equal(invalid.json<{ code: string }>().code, 'request_invalid')
      })

      test('401 without the authToken, with an altered or expired one, or with a Tessera token', async () => {
        const { authToken: token, userId, sessionToken } = await authToken()
        const expired = await ctx().services.travelRuleNode!.customerToken({ organizationId: ctx().client.organizationId, userId, ttlSeconds: -1 })
        const altered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`
        const [body] = token.split('.')
        const otherUser = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString('utf8')), u: UNKNOWN_ID })).toString('base64url')
        for (const authorization of [undefined, '', token, `Basic ${token}`, `Bearer ${altered}`, `Bearer ${otherUser}.${token.split('.')[1]}`, `Bearer ${expired}`, `Bearer ${sessionToken}`, `Bearer ${suite.token}`]) {
          for (const [method, path, payload] of [['GET', `/addresses/bitcoin/${EXCHANGE_WALLET}`, undefined], ['POST', '/transfers/validate', transfer({ type: 'legal', name: 'Acme' })]] as const) {
            const response = await node(method, path, authorization, payload)
            assert.equal(response.statusCode, 401, `${method} ${path} with ${String(authorization).slice(0, 20)}: ${response.body}`)
            assert.equal(response.json<{ code: string }>().code, 'token_invalid')
            // RFC 6750 §3: the scheme to use, and why a bearer token sent was refused.
            const challenge = String(response.headers['www-authenticate'])
            assert.match(challenge, /^Bearer realm="tessera"/)
            assert.equal(challenge.includes('error="invalid_token"'), /^Bearer \S/.test(authorization ?? ''), challenge)
          }
        }
      })
    })

    // --- The hosted page ----------------------------------------------------------------------------------------

    test('GET /hosted/travel-rule-widget/: the page and its bundles, scripts from itself, talking to Tessera (and its node) only, framed by any origin in sandbox', async () => {
      const page = await ctx().app.inject({ method: 'GET', url: '/hosted/travel-rule-widget/' })
      assert.equal(page.statusCode, 200, page.body)
      assert.match(String(page.headers['content-type']), /^text\/html/)
      const csp = String(page.headers['content-security-policy'])
      for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", `connect-src 'self' ${new URL(ctx().config.publicUrl).origin}`, "frame-src 'none'", 'frame-ancestors *']) {
        assert.ok(csp.split('; ').includes(directive), `${directive} in ${csp}`)
      }
      assert.match(page.body, /<script type="module" src="\/hosted\/assets\/travel-rule-widget\.js"><\/script>/)
      assert.match(page.body, /<link rel="stylesheet" href="\/hosted\/assets\/travel-rule-widget\.css">/)
      assert.ok(page.body.includes(`<meta name="tessera-api-base" content="${ctx().config.publicUrl}">`))
      assert.equal(page.headers['cache-control'], 'no-store')
      for (const [file, type] of [['travel-rule-widget.js', /^text\/javascript/], ['travel-rule-widget.css', /^text\/css/]] as const) {
        const asset = await ctx().app.inject({ method: 'GET', url: `/hosted/assets/${file}` })
        assert.equal(asset.statusCode, 200, file)
        assert.match(String(asset.headers['content-type']), type)
        assert.ok(asset.body.length > 500, `${file} is a real bundle`)
      }
    })
  })

  describe(`travel-rule widget sessions with ALLOWED_ORIGINS [${engine}]`, () => {
    const suite = useApp(engine, { ALLOWED_ORIGINS: 'https://shop.example' })

    test('the page may be framed by the allowed origins only', async () => {
      const page = await suite.ctx.app.inject({ method: 'GET', url: '/hosted/travel-rule-widget/' })
      const csp = String(page.headers['content-security-policy'])
      assert.ok(csp.includes('frame-ancestors https://shop.example'), csp)
      assert.ok(!csp.includes('frame-ancestors *'), csp)
    })
  })

  describe(`travel-rule widget sessions in production [${engine}]`, () => {
    const suite = useApp(engine, {
      TESSERA_ENV: 'production',
      TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey,
      SEALING_KEY: Buffer.alloc(32, 5).toString('base64'),
      PRICE_FEED: 'simulated',
    })

    test('without a travel-rule network the widget is not enabled (409 permission-denied), and there is no sandbox node', async () => {
      const userId = (await suite.ctx.createUser(suite.token, individualUser())).id
      const response: TestResponse = await suite.ctx.request({ method: 'POST', url: SESSIONS, headers: bearer(suite.token, userId), payload: { flow: 'deposit-form', data: { requestForInformationId: UNKNOWN_ID } } })
      assert.deepEqual(assertError(response, 409, 'operation_not_allowed'), { reasons: ['permission-denied'] })
      const nodeRoute = await suite.ctx.app.inject({ method: 'GET', url: `${NODE}/addresses/bitcoin/${SENDER}` })
      assert.equal(nodeRoute.statusCode, 404)
    })
  })
}
