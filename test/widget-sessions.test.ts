/**
 * Payment widget sessions through the HTTP API (src/modules/widgets): creating them, what their token may do (one
 * user, one flow, one quote), revocation, `scope=*` at the token endpoint, CORS for browser apps, and the hosted
 * widget pages and bundles.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { basicAuth, bearer, ENGINES, useApp, type TestContext, type TestResponse } from './helpers.ts'
import { assertError, commit, openAccount, quoted, verifiedUser, type Quote, type Transaction } from './money.ts'

const SESSIONS = '/widgets/payment/sessions'
const CURRENT = '/widgets/payment/sessions/current'
const FRICTIONLESS_CARD = '4242424242424242'
const EXPIRY = { month: 12, year: new Date().getUTCFullYear() + 3 }
const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'
const BROWSER_ORIGIN = 'http://localhost:8789'
const AUTHORIZE_SCOPES = ['core.transactions:create', 'core.transactions:read']
const SELECT_SCOPES = ['core.external-accounts:read', 'core.external-accounts:create']

interface Session {
  flow: string
  url: string
  token: string
  data?: Record<string, unknown>
}

interface CurrentSession {
  session: { flow: string; data: Record<string, unknown>; expiresAt: string }
  quote?: Quote
  settings: { pollIntervalMs: number; maxPollAttempts: number; returnUrl: string }
}

/** The claims of a JWT, read without checking anything (the service checks them). */
function claimsOf(token: string): Record<string, unknown> {
  const [, payload] = token.split('.')
  assert.ok(payload, 'a JWT')
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
}

for (const engine of ENGINES) {
  describe(`payment widget sessions [${engine}]`, () => {
    const suite = useApp(engine, { SANDBOX_RAIL_SETTLE_MS: '0' })
    const ctx = () => suite.ctx

    async function linkCard(userId: string, number = FRICTIONLESS_CARD, token = suite.token, onBehalf = true): Promise<TestResponse> {
      return ctx().request({
        method: 'POST',
        url: '/core/external-accounts',
        headers: bearer(token, onBehalf ? userId : undefined),
        payload: { type: 'card', label: `Card ${number.slice(-4)}`, number, securityCode: '123', expiryDate: EXPIRY },
      })
    }

    /** A verified user with an EUR account and a linked frictionless card. */
    async function depositor(): Promise<{ userId: string; eur: string; card: string }> {
      const userId = await verifiedUser(ctx(), suite.token)
      const eur = await openAccount(ctx(), suite.token, userId, 'EUR')
      const linked = await linkCard(userId)
      assert.equal(linked.status, 201, linked.body)
      return { userId, eur, card: linked.json<{ externalAccount: { id: string } }>().externalAccount.id }
    }

    const cardQuote = (userId: string, card: string, eur: string, amount = '25', ttl?: number) =>
      quoted(ctx(), suite.token, userId, {
        origin: { type: 'external-account', id: card },
        destination: { type: 'account', id: eur },
        denomination: { asset: 'EUR', amount },
        ...(ttl !== undefined ? { ttl } : {}),
      })

    const createSession = (userId: string | undefined, body: unknown, token = suite.token) =>
      ctx().request({ method: 'POST', url: SESSIONS, headers: bearer(token, userId), payload: body as Record<string, unknown> })

    async function session(userId: string, body: Record<string, unknown>, token = suite.token): Promise<Session> {
      const response = await createSession(userId, body, token)
      assert.equal(response.status, 201, response.body)
      return response.json<{ session: Session }>().session
    }

    const current = (token: string, userId?: string) => ctx().request({ method: 'GET', url: CURRENT, headers: bearer(token, userId) })

    async function counts(): Promise<{ transactions: number; quotes: number }> {
      const db = ctx().database.db
      const transactions = await db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      const quotes = await db.selectFrom('quotes').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      return { transactions: Number(transactions.n), quotes: Number(quotes.n) }
    }

    // --- Creating sessions -----------------------------------------------------------------------------------------

    describe('POST /widgets/payment/sessions', () => {
      test('authorize: the session for the quote, its page, a token bound to the user, flow and quote', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur)
        const response = await createSession(userId, { flow: 'authorize', data: { quoteId: quote.id, domain: 'localhost', requirements: ['authorize:3ds'] } })
        assert.equal(response.status, 201, response.body)
        const created = response.json<{ session: Session }>().session
        assert.deepEqual(Object.keys(created).sort(), ['data', 'flow', 'token', 'url'])
        assert.equal(created.flow, 'authorize')
        assert.equal(created.url, `${ctx().config.publicUrl}/hosted/payment-widget/`)
        assert.ok(created.url.endsWith('/hosted/payment-widget/'))
        assert.deepEqual(created.data, { quoteId: quote.id, domain: 'localhost' })

        const claims = claimsOf(created.token)
        assert.equal(claims.user_id, userId)
        assert.deepEqual(claims.widget, { kind: 'payment', flow: 'authorize', quoteId: quote.id, domain: 'localhost' })
        assert.deepEqual(String(claims.scope).split(' ').sort(), [...AUTHORIZE_SCOPES].sort())
        assert.equal(claims.client_id, ctx().client.clientId)
        assert.equal(claims.organization_id, ctx().client.organizationId)
        assert.equal(Number(claims.exp) - Number(claims.iat), ctx().config.widgetSessionTtlSeconds)
        assert.equal(ctx().config.widgetSessionTtlSeconds, 900)

        // The quote id and domain are echoed in their one spelling.
        const upper = await session(userId, { flow: 'authorize', data: { quoteId: quote.id.toUpperCase(), domain: 'Shop.Example.COM' } })
        assert.deepEqual(upper.data, { quoteId: quote.id, domain: 'shop.example.com' })
      })

      for (const flow of ['select-for-deposit', 'select-for-withdrawal']) {
        test(`${flow}: no quote, data optional; the token may list and link cards only`, async () => {
          const userId = await verifiedUser(ctx(), suite.token)
          const bare = await session(userId, { flow })
          assert.equal(bare.flow, flow)
          assert.equal(bare.url, `${ctx().config.publicUrl}/hosted/payment-widget/`)
          assert.equal(bare.data, undefined)
          const withDomain = await session(userId, { flow, data: { domain: 'localhost' } })
          assert.deepEqual(withDomain.data, { domain: 'localhost' })
          const empty = await session(userId, { flow, data: {} })
          assert.equal(empty.data, undefined)
          const claims = claimsOf(bare.token)
          assert.deepEqual(claims.widget, { kind: 'payment', flow })
          assert.deepEqual(String(claims.scope).split(' ').sort(), [...SELECT_SCOPES].sort())
        })
      }

      test('the token never holds more than the client\'s token: the session\'s scopes are narrowed to it', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur)
        const narrow = await ctx().token(ctx().client, 'widgets.payment.sessions:create core.users:act-on-behalf-of core.transactions:create')
        const created = await session(userId, { flow: 'authorize', data: { quoteId: quote.id } }, narrow)
        assert.equal(claimsOf(created.token).scope, 'core.transactions:create')
        // Without core.transactions:read it cannot read the transaction it creates.
        const executed = await ctx().request({ method: 'POST', url: '/core/transactions', headers: bearer(created.token), payload: { quoteId: quote.id, params: { requirements: [{ name: 'authorize:3ds', returnUrl: 'https://shop.example/paid' }] } } })
        assert.equal(executed.status, 201, executed.body)
        const id = executed.json<{ transaction: Transaction }>().transaction.id
        assertError(await ctx().request({ method: 'GET', url: `/core/transactions/${id}`, headers: bearer(created.token) }), 403, 'token_insufficient_scopes')
        await ctx().services.worker.drain()
      })

      test('the scope widgets.payment.sessions:create is required, and a user to act for', async () => {
        const userId = await verifiedUser(ctx(), suite.token)
        const without = await ctx().token(ctx().client, 'core.users:act-on-behalf-of core.transactions:create core.transactions:read core.external-accounts:read')
        const refused = await createSession(userId, { flow: 'select-for-deposit' }, without)
        assertError(refused, 403, 'token_insufficient_scopes')
        const asClient = await createSession(undefined, { flow: 'select-for-deposit' })
        assertError(asClient, 403, 'subject_not_allowed')
        // A session's own token cannot open another session.
        const own = await session(userId, { flow: 'select-for-deposit' })
        assertError(await createSession(undefined, { flow: 'select-for-deposit' }, own.token), 403, 'token_insufficient_scopes')
        assertError(await createSession(userId, { flow: 'select-for-deposit' }, own.token), 403, 'token_insufficient_scopes')
      })

      test('a quote that is unknown, expired, executed or another user\'s is not found (404, entity quote)', async () => {
        const { userId, eur, card } = await depositor()
        const stranger = await depositor()
        const strangersQuote = await cardQuote(stranger.userId, stranger.card, stranger.eur)
        const shortLived = await cardQuote(userId, card, eur, '25', 1_000)
        const executed = await cardQuote(userId, card, eur, '26')
        assert.equal((await commit(ctx(), suite.token, userId, executed.id, { body: { params: { requirements: [{ name: 'authorize:3ds', returnUrl: 'https://shop.example/paid' }] } } })).status, 201)
        await ctx().services.worker.drain()
        await new Promise((resolve) => setTimeout(resolve, 1_100))
        const before = await counts()

        for (const [label, quoteId] of [['unknown', UNKNOWN_ID], ['expired', shortLived.id], ['executed', executed.id], ['another user\'s', strangersQuote.id]] as const) {
          const response = await createSession(userId, { flow: 'authorize', data: { quoteId } })
          assert.deepEqual(assertError(response, 404, 'entity_not_found'), { context: 'body', property: 'data.quoteId', entity: 'quote' }, label)
        }
        assert.deepEqual(await counts(), before)
        // The stranger's quote is still theirs to authorize.
        assert.equal((await createSession(stranger.userId, { flow: 'authorize', data: { quoteId: strangersQuote.id } })).status, 201)
      })

      test('Apple Pay and Google Pay are refused (409 operation_not_allowed, permission-denied)', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur)
        const refusals: [string, Record<string, unknown>][] = [
          ['authorize:apple-pay', { flow: 'authorize', data: { quoteId: quote.id, requirements: ['authorize:3ds', 'authorize:apple-pay'] } }],
          ['authorize:google-pay', { flow: 'authorize', data: { quoteId: quote.id, requirements: ['authorize:google-pay'] } }],
          ['paymentMethods google-pay', { flow: 'authorize', data: { quoteId: quote.id, paymentMethods: [{ type: 'google-pay' }] } }],
          ['paymentMethods apple-pay (select)', { flow: 'select-for-deposit', data: { paymentMethods: [{ type: 'card' }, { type: 'apple-pay' }] } }],
        ]
        for (const [label, body] of refusals) {
          assert.deepEqual(assertError(await createSession(userId, body), 409, 'operation_not_allowed'), { reasons: ['permission-denied'] }, label)
        }
        // Cards alone are fine.
        assert.equal((await createSession(userId, { flow: 'authorize', data: { quoteId: quote.id, paymentMethods: [{ type: 'card' }] } })).status, 201)
      })

      test('bad bodies are 400 request_invalid with their violations; nothing changes', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur)
        const before = await counts()
        const invalid: [string, unknown, string, string][] = [
          ['an unknown flow', { flow: 'pay-everything', data: { quoteId: quote.id } }, 'flow', 'const'],
          ['no flow', { data: { quoteId: quote.id } }, 'flow', 'required'],
          ['authorize without data', { flow: 'authorize' }, 'data', 'required'],
          ['authorize without data.quoteId', { flow: 'authorize', data: { domain: 'localhost' } }, 'data.quoteId', 'required'],
          ['a quoteId that is not a uuid', { flow: 'authorize', data: { quoteId: 'quote-1' } }, 'data.quoteId', 'format'],
          ['a quoteId that is a number', { flow: 'authorize', data: { quoteId: 42 } }, 'data.quoteId', 'type'],
          ['a domain that is not a host name', { flow: 'select-for-deposit', data: { domain: 'https://shop.example/' } }, 'data.domain', 'pattern'],
          ['too many requirements', { flow: 'authorize', data: { quoteId: quote.id, requirements: Array.from({ length: 11 }, () => 'authorize:3ds') } }, 'data.requirements', 'maxItems'],
          ['a huge requirement', { flow: 'authorize', data: { quoteId: quote.id, requirements: ['x'.repeat(100_000)] } }, 'data.requirements[0]', 'maxLength'],
        ]
        for (const [label, body, property, rule] of invalid) {
          const response = await createSession(userId, body)
          const details = assertError(response, 400, 'request_invalid') as { context: string; violations: { property: string; rule: string }[] }
          assert.equal(details.context, 'body', label)
          assert.ok(details.violations.some((violation) => violation.property === property && violation.rule === rule), `${label}: ${JSON.stringify(details.violations)}`)
        }
        // Not JSON, and larger than the body limit.
        const notJson = await ctx().request({ method: 'POST', url: SESSIONS, headers: { ...bearer(suite.token, userId), 'content-type': 'application/json' }, payload: '{"flow":' })
        assertError(notJson, 400, 'request_invalid')
        const huge = await createSession(userId, { flow: 'select-for-deposit', data: { filler: 'x'.repeat(ctx().config.bodyLimitBytes) } })
        assert.equal(huge.status, 413, huge.body)
        assert.deepEqual(await counts(), before)
        // The quote can still be authorized.
        assert.equal((await createSession(userId, { flow: 'authorize', data: { quoteId: quote.id } })).status, 201)
      })
    })

    // --- The session's token ---------------------------------------------------------------------------------------

    describe('the session token', () => {
      test('GET /widgets/payment/sessions/current: the session, its quote, and how the widget behaves', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur)
        const created = await session(userId, { flow: 'authorize', data: { quoteId: quote.id, domain: 'localhost' } })
        const issuedAt = Date.now()
        const response = await current(created.token)
        assert.equal(response.status, 200, response.body)
        const body = response.json<CurrentSession>()
        assert.equal(body.session.flow, 'authorize')
        assert.deepEqual(body.session.data, { quoteId: quote.id, domain: 'localhost' })
        const expiresIn = new Date(body.session.expiresAt).getTime() - issuedAt
        assert.ok(Math.abs(expiresIn - ctx().config.widgetSessionTtlSeconds * 1000) < 5_000, `expires in ${expiresIn} ms`)
        assert.equal(new Date(body.session.expiresAt).getTime() / 1000, claimsOf(created.token).exp)
        assert.deepEqual(body.quote, quote)
        assert.deepEqual(body.settings, {
          pollIntervalMs: ctx().config.widgetPollIntervalMs,
          maxPollAttempts: ctx().config.widgetPollMaxAttempts,
          returnUrl: `${ctx().config.publicUrl}/hosted/payment-widget/3ds-return`,
        })
        assert.ok(body.settings.returnUrl.endsWith('/hosted/payment-widget/3ds-return'))

        // With X-On-Behalf-Of naming its own user, the same.
        assert.equal((await current(created.token, userId)).status, 200)

        // A select session has no quote.
        const select = await session(userId, { flow: 'select-for-deposit' })
        const selectBody = (await current(select.token)).json<CurrentSession>()
        assert.equal(selectBody.session.flow, 'select-for-deposit')
        assert.deepEqual(selectBody.session.data, {})
        assert.equal(selectBody.quote, undefined)
      })

      test('only a session\'s token reaches the current session: a client\'s token gets 404 (or 403 acting for nobody)', async () => {
        const userId = await verifiedUser(ctx(), suite.token)
        assert.equal((assertError(await current(suite.token, userId), 404, 'entity_not_found') as { entity: string }).entity, 'session')
        assertError(await current(suite.token), 403, 'subject_not_allowed')
        assertError(await ctx().request({ method: 'GET', url: CURRENT }), 401, 'token_invalid')
        assertError(await current('not-a-token'), 401, 'token_invalid')
      })

      test('authorize: executes its own quote (3-D Secure) and reads its transaction, without X-On-Behalf-Of', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur, '40')
        const other = await cardQuote(userId, card, eur, '41')
        const created = await session(userId, { flow: 'authorize', data: { quoteId: quote.id, requirements: ['authorize:3ds'] } })
        const { settings } = (await current(created.token)).json<CurrentSession>()
        const execute = (quoteId: string, headers: Record<string, string> = {}) =>
          ctx().request({
            method: 'POST',
            url: '/core/transactions',
            headers: { ...bearer(created.token), ...headers },
            payload: { quoteId, params: { requirements: [{ name: 'authorize:3ds', returnUrl: settings.returnUrl }] } },
          })

        // Another quote of the same user does not exist for this session; nor does another user.
        assert.equal((assertError(await execute(other.id), 404, 'entity_not_found') as { entity: string }).entity, 'quote')
        const stranger = await verifiedUser(ctx(), suite.token)
        assert.equal((assertError(await execute(quote.id, { 'x-on-behalf-of': `user ${stranger}` }), 404, 'entity_not_found') as { entity: string }).entity, 'user')
        assertError(await execute(quote.id, { 'x-on-behalf-of': `client ${ctx().client.clientId}` }), 404, 'entity_not_found')
        // Without the return URL, the documented refusal.
        const noReturn = await ctx().request({ method: 'POST', url: '/core/transactions', headers: bearer(created.token), payload: { quoteId: quote.id } })
        assert.deepEqual(assertError(noReturn, 409, 'operation_not_allowed'), { reasons: ['missing-return-url'] })

        const executed = await execute(quote.id)
        assert.equal(executed.status, 201, executed.body)
        const transaction = executed.json<{ transaction: Transaction }>().transaction
        assert.equal(transaction.status, 'processing')
        assert.deepEqual(transaction.origin.node, { type: 'external-account', id: card, ownerId: userId, network: 'visa' })
        const [payment] = (await ctx().services.sandboxCardProcessor!.payments(ctx().client.organizationId)).filter((row) => row.reference === transaction.id)
        assert.equal(payment?.return_url, settings.returnUrl)

        await ctx().services.worker.drain()
        const read = await ctx().request({ method: 'GET', url: `/core/transactions/${transaction.id}`, headers: bearer(created.token) })
        assert.equal(read.status, 200, read.body)
        assert.equal(read.json<{ transaction: Transaction }>().transaction.status, 'completed')
        assertError(await ctx().request({ method: 'GET', url: `/core/transactions/${transaction.id}`, headers: bearer(created.token, stranger) }), 404, 'entity_not_found')

        // Its quote is used now: a second execution is refused.
        assertError(await execute(quote.id), 404, 'entity_not_found')
        // The other quote is still the user's to execute, with the client's own token.
        assert.equal((await commit(ctx(), suite.token, userId, other.id, { body: { params: { returnUrl: 'https://shop.example/paid' } } })).status, 201)
        await ctx().services.worker.drain()
      })

      test('authorize: cannot list or link cards, read the user or their accounts (403 token_insufficient_scopes)', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur)
        const { token } = await session(userId, { flow: 'authorize', data: { quoteId: quote.id } })
        const before = await counts()
        assertError(await ctx().request({ method: 'GET', url: '/core/external-accounts?type=card', headers: bearer(token) }), 403, 'token_insufficient_scopes')
        assertError(await linkCard(userId, '5200828282828210', token, false), 403, 'token_insufficient_scopes')
        assertError(await ctx().request({ method: 'GET', url: '/core/users/me', headers: bearer(token) }), 403, 'token_insufficient_scopes')
        assertError(await ctx().request({ method: 'GET', url: `/core/accounts/${eur}`, headers: bearer(token) }), 403, 'token_insufficient_scopes')
        assertError(await ctx().request({ method: 'POST', url: '/core/accounts', headers: bearer(token), payload: { label: 'More', asset: 'BTC' } }), 403, 'token_insufficient_scopes')
        assert.deepEqual(await counts(), before)
      })

      test('authorize: cannot create quotes (its scope core.transactions:create is for its own quote\'s execution)', async () => {
        const { userId, eur, card } = await depositor()
        const quote = await cardQuote(userId, card, eur)
        const { token } = await session(userId, { flow: 'authorize', data: { quoteId: quote.id } })
        const before = await counts()
        const quoteBody = { origin: { type: 'external-account', id: card }, destination: { type: 'account', id: eur }, denomination: { asset: 'EUR', amount: '5' } }
        const response = await ctx().request({ method: 'POST', url: '/core/transactions/quote', headers: bearer(token), payload: quoteBody })
        assertError(response, 403, 'token_insufficient_scopes')
        assert.deepEqual(await counts(), before)
      })

      test('select-for-deposit: lists and links the user\'s cards, for that user only; cannot create transactions', async () => {
        const { userId, eur, card } = await depositor()
        const stranger = await depositor()
        const { token } = await session(userId, { flow: 'select-for-deposit', data: { domain: 'localhost' } })

        const listed = await ctx().request({ method: 'GET', url: '/core/external-accounts?type=card', headers: bearer(token) })
        assert.equal(listed.status, 200, listed.body)
        assert.deepEqual(listed.json<{ externalAccounts: { id: string }[] }>().externalAccounts.map((account) => account.id), [card])

        const linked = await linkCard(userId, '5200828282828210', token, false)
        assert.equal(linked.status, 201, linked.body)
        const added = linked.json<{ externalAccount: { id: string; ownerId: string; type: string } }>().externalAccount
        assert.equal(added.ownerId, userId)
        assert.equal(added.type, 'card')
        const relisted = await ctx().request({ method: 'GET', url: '/core/external-accounts?type=card', headers: bearer(token) })
        assert.deepEqual(relisted.json<{ externalAccounts: { id: string }[] }>().externalAccounts.map((account) => account.id).sort(), [card, added.id].sort())

        // Another user, named with X-On-Behalf-Of: not found; their cards are untouched.
        assertError(await ctx().request({ method: 'GET', url: '/core/external-accounts?type=card', headers: bearer(token, stranger.userId) }), 404, 'entity_not_found')
        assertError(await linkCard(stranger.userId, '5200828282828210', token), 404, 'entity_not_found')
        const strangersCards = await ctx().request({ method: 'GET', url: '/core/external-accounts?type=card', headers: bearer(suite.token, stranger.userId) })
        assert.deepEqual(strangersCards.json<{ externalAccounts: { id: string }[] }>().externalAccounts.map((account) => account.id), [stranger.card])

        const before = await counts()
        const quote = await cardQuote(userId, card, eur)
        const after = await counts()
        const executed = await ctx().request({ method: 'POST', url: '/core/transactions', headers: bearer(token), payload: { quoteId: quote.id, params: { returnUrl: 'https://shop.example/paid' } } })
        assertError(executed, 403, 'token_insufficient_scopes')
        assertError(await ctx().request({ method: 'GET', url: '/core/transactions', headers: bearer(token) }), 403, 'token_insufficient_scopes')
        assert.deepEqual(await counts(), { ...after, transactions: before.transactions })
      })

      test('a session of a revoked client stops working (401 token_revoked)', async () => {
        const other = await ctx().newClient('*', ctx().client.organizationId)
        const otherToken = await ctx().token(other)
        const userId = await verifiedUser(ctx(), otherToken)
        const { token } = await session(userId, { flow: 'select-for-deposit' }, otherToken)
        assert.equal((await current(token)).status, 200)
        assert.equal((await ctx().request({ method: 'GET', url: '/core/external-accounts', headers: bearer(token) })).status, 200)
        await ctx().services.clients.revoke(other.clientId)
        assertError(await current(token), 401, 'token_revoked')
        assertError(await ctx().request({ method: 'GET', url: '/core/external-accounts', headers: bearer(token) }), 401, 'token_revoked')
        // The main client's sessions for the same user still work.
        const mine = await session(userId, { flow: 'select-for-deposit' })
        assert.equal((await current(mine.token)).status, 200)
      })

      test('a tampered token is refused (401 token_invalid)', async () => {
        const userId = await verifiedUser(ctx(), suite.token)
        const stranger = await verifiedUser(ctx(), suite.token)
        const { token } = await session(userId, { flow: 'select-for-deposit' })
        const [header, payload, signature] = token.split('.') as [string, string, string]
        const claims = { ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), user_id: stranger }
        const forged = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`
        assertError(await current(forged), 401, 'token_invalid')
      })
    })

    // --- The token endpoint ----------------------------------------------------------------------------------------

    test('POST /core/oauth2/token with scope=* gives every scope the client holds', async () => {
      const issue = async (client: { clientId: string; clientSecret: string }, scope?: string) => {
        const response = await ctx().request({
          method: 'POST',
          url: '/core/oauth2/token',
          headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ grant_type: 'client_credentials', ...(scope !== undefined ? { scope } : {}) }).toString(),
        })
        assert.equal(response.status, 200, response.body)
        return response.json<{ access_token: string; scope: string }>()
      }
      const scopesOf = (scope: string) => scope.split(' ').sort()
      const all = await issue(ctx().client)
      const star = await issue(ctx().client, '*')
      assert.deepEqual(scopesOf(star.scope), scopesOf(all.scope))
      assert.deepEqual(scopesOf(String(claimsOf(star.access_token).scope)), scopesOf(all.scope))
      assert.ok(scopesOf(star.scope).includes('widgets.payment.sessions:create'))
      assert.ok(scopesOf(star.scope).length > 20)

      const limited = await ctx().newClient('core.users:read core.users:create', ctx().client.organizationId)
      assert.deepEqual(scopesOf((await issue(limited, '*')).scope), ['core.users:create', 'core.users:read'])
      assert.deepEqual(scopesOf((await issue(limited, ' * ')).scope), ['core.users:create', 'core.users:read'])
      // `*` is not a scope among others.
      const mixed = await ctx().request({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { authorization: basicAuth(limited), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ grant_type: 'client_credentials', scope: '* core.users:read' }).toString(),
      })
      assert.equal(mixed.status, 400, mixed.body)
    })

    // --- CORS --------------------------------------------------------------------------------------------------------

    describe('CORS (any origin in sandbox)', () => {
      for (const url of ['/core/oauth2/token', SESSIONS, '/core/transactions']) {
        test(`a preflight to ${url} is answered for the origin`, async () => {
          const response = await ctx().app.inject({
            method: 'OPTIONS',
            url,
            headers: { origin: BROWSER_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-on-behalf-of' },
          })
          assert.equal(response.statusCode, 204, response.body)
          assert.equal(response.headers['access-control-allow-origin'], BROWSER_ORIGIN)
          const methods = String(response.headers['access-control-allow-methods']).split(/,\s*/)
          for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) assert.ok(methods.includes(method), `${method} in ${methods.join(',')}`)
          const allowed = String(response.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/)
          for (const header of ['authorization', 'content-type', 'x-on-behalf-of']) assert.ok(allowed.includes(header), `${header} in ${allowed.join(',')}`)
          assert.match(String(response.headers.vary), /origin/i)
        })
      }

      test('a request from a browser origin carries access-control-allow-origin and exposes the request id', async () => {
        const userId = await verifiedUser(ctx(), suite.token)
        const { token } = await session(userId, { flow: 'select-for-deposit' })
        const response = await ctx().request({ method: 'GET', url: CURRENT, headers: { ...bearer(token), origin: BROWSER_ORIGIN } })
        assert.equal(response.status, 200)
        assert.equal(response.headers['access-control-allow-origin'], BROWSER_ORIGIN)
        const exposed = String(response.headers['access-control-expose-headers']).toLowerCase().split(/,\s*/)
        assert.ok(exposed.includes('x-service-request-id'), exposed.join(','))
        assert.ok(response.headers['x-service-request-id'])
        // An error the operation answers too (a filter it does not know).
        const created = await session(userId, { flow: 'select-for-deposit' })
        const invalid = await ctx().request({ method: 'GET', url: '/core/external-accounts?type=nope', headers: { ...bearer(created.token), origin: BROWSER_ORIGIN } })
        assert.equal(invalid.status, 400)
        assert.equal(invalid.headers['access-control-allow-origin'], BROWSER_ORIGIN)
      })

      test('a refused token\'s answer (401, 403) is readable by the browser app too: it carries access-control-allow-origin', async () => {
        const userId = await verifiedUser(ctx(), suite.token)
        const { token } = await session(userId, { flow: 'select-for-deposit' })
        const cases: [string, TestResponse, number][] = [
          ['no token', await ctx().request({ method: 'GET', url: CURRENT, headers: { origin: BROWSER_ORIGIN } }), 401],
          ['a bad token', await ctx().request({ method: 'GET', url: CURRENT, headers: { ...bearer('not-a-token'), origin: BROWSER_ORIGIN } }), 401],
          ['a scope the session lacks', await ctx().request({ method: 'GET', url: '/core/transactions', headers: { ...bearer(token), origin: BROWSER_ORIGIN } }), 403],
        ]
        for (const [label, response, status] of cases) {
          assert.equal(response.status, status, label)
          assert.equal(response.headers['access-control-allow-origin'], BROWSER_ORIGIN, `${label}: ${JSON.stringify(response.headers)}`)
          assert.ok(String(response.headers['access-control-expose-headers']).includes('x-service-request-id'), label)
        }
      })
    })

    // --- Hosted pages ------------------------------------------------------------------------------------------------

    describe('hosted pages and bundles', () => {
      test('GET /hosted/payment-widget/: the page, scripts from itself only, framed by any origin in sandbox', async () => {
        const page = await ctx().app.inject({ method: 'GET', url: '/hosted/payment-widget/' })
        assert.equal(page.statusCode, 200, page.body)
        assert.match(String(page.headers['content-type']), /^text\/html/)
        const csp = String(page.headers['content-security-policy'])
        assert.ok(csp.includes("script-src 'self'"), csp)
        assert.ok(csp.includes('frame-ancestors *'), csp)
        assert.ok(csp.includes("default-src 'none'"), csp)
        assert.match(page.body, /<script type="module" src="\/hosted\/assets\/payment-widget\.js"><\/script>/)
        assert.ok(page.body.includes(`<meta name="tessera-api-base" content="${ctx().config.publicUrl}">`))
        assert.equal(page.headers['x-content-type-options'], 'nosniff')

        const back = await ctx().app.inject({ method: 'GET', url: '/hosted/payment-widget/3ds-return' })
        assert.equal(back.statusCode, 200)
        assert.ok(String(back.headers['content-security-policy']).includes("script-src 'self'"))
        assert.match(back.body, /payment-widget-return\.js/)
      })

      test('GET /hosted/assets/payment-widget.js: the bundle, with an ETag; 304 when it did not change', async () => {
        const bundle = await ctx().app.inject({ method: 'GET', url: '/hosted/assets/payment-widget.js' })
        assert.equal(bundle.statusCode, 200)
        assert.match(String(bundle.headers['content-type']), /^text\/javascript/)
        const etag = bundle.headers.etag
        assert.ok(typeof etag === 'string' && etag.length > 2, String(etag))
        assert.ok(bundle.body.length > 100, 'a real bundle')
        const again = await ctx().app.inject({ method: 'GET', url: '/hosted/assets/payment-widget.js', headers: { 'if-none-match': etag } })
        assert.equal(again.statusCode, 304)
        assert.equal(again.body, '')
        assert.equal(again.headers.etag, etag)
        const stale = await ctx().app.inject({ method: 'GET', url: '/hosted/assets/payment-widget.js', headers: { 'if-none-match': '"stale"' } })
        assert.equal(stale.statusCode, 200)

        const sdk = await ctx().app.inject({ method: 'GET', url: '/hosted/assets/sdk.js' })
        assert.equal(sdk.statusCode, 200)
        assert.equal(sdk.headers['access-control-allow-origin'], '*')
      })

      test('an unknown asset is 404 with the API\'s error envelope', async () => {
        for (const url of ['/hosted/assets/nope.js', '/hosted/assets/..%2Fpackage.json']) {
          const response = await ctx().app.inject({ method: 'GET', url })
          assert.equal(response.statusCode, 404, url)
          assert.match(String(response.headers['content-type']), /^application\/json/)
          const body = response.json<{ code: string; message: string }>()
          assert.equal(body.code, 'route_not_found')
          assert.equal(typeof body.message, 'string')
        }
      })
    })
  })

  describe(`payment widget sessions with ALLOWED_ORIGINS and widget settings [${engine}]`, () => {
    const suite = useApp(engine, { ALLOWED_ORIGINS: 'https://shop.example', WIDGET_SESSION_TTL_SECONDS: '60', WIDGET_POLL_INTERVAL_MS: '250', WIDGET_POLL_MAX_ATTEMPTS: '7' })
    const ctx = (): TestContext => suite.ctx

    const preflight = (url: string, origin: string) =>
      ctx().app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type,x-on-behalf-of' },
      })

    test('another origin gets no access-control-allow-origin; the allowed one does', async () => {
      for (const url of ['/core/oauth2/token', SESSIONS]) {
        const refused = await preflight(url, BROWSER_ORIGIN)
        assert.equal(refused.headers['access-control-allow-origin'], undefined, url)
        const allowed = await preflight(url, 'https://shop.example')
        assert.equal(allowed.statusCode, 204)
        assert.equal(allowed.headers['access-control-allow-origin'], 'https://shop.example')
      }
      const userId = (await ctx().createUser(suite.token)).id
      const other = await ctx().request({ method: 'GET', url: '/core/users/me', headers: { ...bearer(suite.token, userId), origin: BROWSER_ORIGIN } })
      assert.equal(other.status, 200)
      assert.equal(other.headers['access-control-allow-origin'], undefined)
      const shop = await ctx().request({ method: 'GET', url: '/core/users/me', headers: { ...bearer(suite.token, userId), origin: 'https://shop.example' } })
      assert.equal(shop.headers['access-control-allow-origin'], 'https://shop.example')
    })

    test('the session lasts WIDGET_SESSION_TTL_SECONDS, and the widget polls as configured', async () => {
      const userId = (await ctx().createUser(suite.token)).id
      const response = await ctx().request({ method: 'POST', url: SESSIONS, headers: bearer(suite.token, userId), payload: { flow: 'select-for-withdrawal' } })
      assert.equal(response.status, 201, response.body)
      const { token } = response.json<{ session: Session }>().session
      const claims = claimsOf(token)
      assert.equal(Number(claims.exp) - Number(claims.iat), 60)
      const current = await ctx().request({ method: 'GET', url: CURRENT, headers: bearer(token) })
      assert.equal(current.status, 200, current.body)
      const body = current.json<CurrentSession>()
      assert.equal(new Date(body.session.expiresAt).getTime(), Number(claims.exp) * 1000)
      assert.deepEqual(body.settings, { pollIntervalMs: 250, maxPollAttempts: 7, returnUrl: `${ctx().config.publicUrl}/hosted/payment-widget/3ds-return` })
    })

    test('the widget page may be framed by the allowed origins only', async () => {
      const page = await ctx().app.inject({ method: 'GET', url: '/hosted/payment-widget/' })
      assert.equal(page.statusCode, 200)
      const csp = String(page.headers['content-security-policy'])
      assert.ok(csp.includes('frame-ancestors https://shop.example'), csp)
      assert.ok(!csp.includes('frame-ancestors *'), csp)
      const back = await ctx().app.inject({ method: 'GET', url: '/hosted/payment-widget/3ds-return' })
      assert.ok(String(back.headers['content-security-policy']).includes("frame-ancestors 'self' https://shop.example"), String(back.headers['content-security-policy']))
    })
  })
}
