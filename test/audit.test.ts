import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { after, describe, test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { sql } from 'kysely'
import { Migrator } from 'kysely/migration'
import { buildApp } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { migrationProvider } from '../src/db/migrations/index.ts'
import { runAudited } from '../src/modules/audit/audit-scope.ts'
import type { App } from '../src/http/types.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { sumsubDigest } from '../src/providers/kyc-connector/sumsub.ts'
import { veriffSignature } from '../src/providers/kyc-connector/veriff.ts'
import { basicAuth, bearer, ENGINES, individualUser, localContext, testConfig, uploadedFile, USER_IP, useApp, type TestContext, type TestResponse } from './helpers.ts'
import { commit, FUNDING_ORIGINATOR, openAccount, quoteBody, quoted, verifiedUser } from './money.ts'
import { cli, deployment } from './processes.ts'
import { deliverUntil, messagesOf, PORTAL_API } from './webhooks/portal.ts'
import { Receiver } from './webhooks/receiver.ts'

const REQUEST_ID_HEADER = 'x-service-request-id'
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const JSON_PATCH = 'application/json-patch+json'
const PAST = '2024-01-01T00:00:00.000Z'
/** A sender on the sandbox's bitcoin test chain that no user declared, and a destination (BIP-173's P2WSH vector). */
const SENDER = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
const DESTINATION = 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7'
const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'
const SUMSUB_WEBHOOK_SECRET = 'sumsub-webhook-secret-for-the-audit-trail'

interface AuditRow {
  id: string
  request_id: string
  operation: string
  method: string
  route: string
  actor: string
  client_id: string | null
  user_id: string | null
  object_type: string | null
  object_id: string | null
  organization_id: string
  at: Date
}

/** A write operation of the generated document, and how to recognize a request path as one of its calls. */
interface Operation {
  id: string
  method: string
  template: string
  pattern: RegExp
  parameters: number
}

/** Every POST, PUT, PATCH and DELETE operation of the app's generated OpenAPI document. */
function writeOperations(app: App): Operation[] {
  const document = app.swagger() as { paths: Record<string, Record<string, { operationId?: string }>> }
  const operations: Operation[] = []
  for (const [template, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!WRITES.has(method.toUpperCase())) continue
      assert.ok(operation.operationId, `${method.toUpperCase()} ${template} has no operationId`)
      const source = template.split(/(\{\w+\})/).map((part) => (/^\{\w+\}$/.test(part) ? `(?<${part.slice(1, -1)}>[^/]+)` : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('')
      operations.push({ id: operation.operationId, method: method.toUpperCase(), template, pattern: new RegExp(`^${source}$`), parameters: (template.match(/\{/g) ?? []).length })
    }
  }
  return operations
}

/** The operation a request calls (the most literal template that matches its path), and its path parameters. */
function operationOf(operations: readonly Operation[], method: string, url: string): { operation: Operation; params: Record<string, string> } | undefined {
  const path = url.split('?')[0]!
  const matches = operations
    .filter((operation) => operation.method === method)
    .map((operation) => ({ operation, match: operation.pattern.exec(path) }))
    .filter((candidate) => candidate.match !== null)
    .sort((a, b) => a.operation.parameters - b.operation.parameters)
  const best = matches[0]
  return best ? { operation: best.operation, params: { ...best.match!.groups } } : undefined
}

/**
 * Write operations that are reads in disguise: POST for a body that says what to read, or a token signed and
 * stored nowhere. Whatever they answer, they change nothing, so they leave no row.
 */
const READS: Record<string, string> = {
  'core.create-oauth2-token': 'signs an access token for the client (client credentials); nothing is stored',
  'core.get-many-assets': 'reads assets by the codes in its body',
  'core.validate-network-address': 'checks an address against its network',
  'core.get-portfolio-many-assets-performance': 'reads the performance of the assets in its body',
  'core.get-portfolio-many-accounts-performance': 'reads the performance of the accounts in its body',
  // The writes made with a widget session's token have their rows (actor `widget-session`, with the client and the user).
  'widgets.create-payment-widget-session': 'signs a payment widget session token; nothing is stored',
  'widgets.create-kyc-widget-session': 'signs a KYC widget session token; nothing is stored',
}

/**
 * Writes that no client credential makes: the trail has nobody to name, so they leave no row. Each follows the
 * client's own write, which has its row.
 */
const UNATTRIBUTED: Record<string, string> = {
  'core.upload-file-content': 'the file\'s content, sent to the presigned upload URL that core.create-file answered (that creation has the row)',
  'webhook-portal.open-session': 'opens the portal with the link core.create-webhook-management-link made (that has the row); the session\'s own writes have theirs, actor `webhook-portal`',
  'kyc-connector.receive-veriff-callback': 'Veriff\'s callback, signed with the connector\'s shared secret, wakes the ingestion a client created (that has the row)',
  'kyc-connector.receive-sumsub-callback': 'Sumsub\'s callback, signed with the deployment\'s webhook secret, wakes the ingestion a client created (that has the row)',
}

/** A write request of the walk-through, with its answer. */
interface Call {
  method: string
  url: string
  headers: Record<string, string>
  status: number
  requestId: string
  operation: string
  params: Record<string, string>
  response: TestResponse
  /** False for a success that writes nothing (an idempotent replay, a session over what exists): no row. */
  wrote: boolean
}

/** Who a row names: the actor, its client and the user it acted for. */
interface Who {
  actor: string
  clientId: string | null
  userId: string | null
}

/** The user a client's request acts for (`x-on-behalf-of: user …`), if any. */
const actingUser = (call: Call): string | null => /^user (.+)$/.exec(call.headers['x-on-behalf-of'] ?? '')?.[1] ?? null
const acting = (call: Call) => ({ type: 'user', id: actingUser(call) })
const body = <T>(call: Call) => call.response.json<T>()

/**
 * What the row of each operation names as its object: the object it created (id from the answer), the object of
 * its path, or the user it acted for. `id: null`: any id (the answer does not show it). An operation that writes
 * must be here, or the walk-through fails.
 */
const OBJECTS: Record<string, (call: Call) => { type: string; id: string | null }> = {
  'core.create-user': (call) => ({ type: 'user', id: body<{ user: { id: string } }>(call).user.id }),
  'core.delete-user': acting,
  'core.set-metadata': metadataObject,
  'core.update-metadata': metadataObject,
  'core.delete-metadata': metadataObject,
  'core.skip-assets-cooldowns': acting,
  'kyc-connector.set-veriff-config': () => ({ type: 'kyc-connector-config', id: 'veriff' }),
  'kyc-connector.create-veriff-ingestion': (call) => ({ type: 'ingestion', id: body<{ ingestion: { id: string } }>(call).ingestion.id }),
  'kyc-connector.create-sumsub-ingestion': (call) => ({ type: 'ingestion', id: body<{ ingestion: { id: string } }>(call).ingestion.id }),
  'core.update-kyc-profile': acting,
  'core.update-kyc-address': acting,
  'core.update-kyc-email': acting,
  'core.update-kyc-phone': acting,
  'core.update-kyc-identity': acting,
  'core.update-kyc-proof-of-address': acting,
  'core.update-kyc-customer-due-diligence': acting,
  'core.update-kyc-enhanced-due-diligence': acting,
  'core.update-kyc-crypto-risk-assessment': acting,
  'core.update-kyc-self-categorization-statement': acting,
  'core.update-kyc-tax-details': acting,
  'core.create-file': (call) => ({ type: 'file', id: body<{ file: { id: string } }>(call).file.id }),
  'core.accept-terms-of-service': (call) => ({ type: 'terms-of-service', id: call.params.termsOfService! }),
  'core.create-account': (call) => ({ type: 'account', id: body<{ account: { id: string } }>(call).account.id }),
  'core.update-account': (call) => ({ type: 'account', id: call.params.accountId! }),
  'core.archive-account': (call) => ({ type: 'account', id: call.params.accountId! }),
  'core.create-quote': (call) => ({ type: 'quote', id: body<{ quote: { id: string } }>(call).quote.id }),
  'create-quote': (call) => ({ type: 'quote', id: body<{ quote: { id: string } }>(call).quote.id }),
  'core.create-transaction': (call) => ({ type: 'transaction', id: body<{ transaction: { id: string } }>(call).transaction.id }),
  'core.update-transaction-request-for-information': (call) => ({ type: 'request-for-information', id: call.params.requestForInformationId! }),
  'core.setup-account-deposit-method': () => ({ type: 'deposit-method', id: null }),
  'core.create-external-account': (call) => ({ type: 'external-account', id: body<{ externalAccount: { id: string } }>(call).externalAccount.id }),
  'core.update-external-account': (call) => ({ type: 'external-account', id: call.params.externalAccountId! }),
  'core.delete-external-account': (call) => ({ type: 'external-account', id: call.params.externalAccountId! }),
  'core.start-external-account-verification': verificationObject,
  'core.answer-external-account-verification': verificationObject,
  // A withdrawal form opens the request for information of its quote.
  'widgets.create-travel-rule-widget-session': () => ({ type: 'request-for-information', id: null }),
  'widgets.answer-travel-rule-widget-session': (call) => ({ type: 'request-for-information', id: body<{ requestForInformation: { id: string } }>(call).requestForInformation.id }),
  'core.create-webhook-management-link': () => ({ type: 'webhook-management-link', id: null }),
  'webhook-portal.create-endpoint': (call) => ({ type: 'webhook-endpoint', id: body<{ endpoint: { id: string } }>(call).endpoint.id }),
  'webhook-portal.update-endpoint': endpointObject,
  'webhook-portal.delete-endpoint': endpointObject,
  'webhook-portal.rotate-secret': endpointObject,
  'webhook-portal.resend-message': (call) => ({ type: 'webhook-message', id: call.params.messageId! }),
  'webhook-portal.replay': endpointObject,
  'webhook-portal.send-test-event': endpointObject,
  // The deposit the sandbox rail reported.
  'core.simulate-bank-deposit': () => ({ type: 'transaction', id: null }),
  'core.simulate-crypto-deposit': () => ({ type: 'transaction', id: null }),
  // The user whose history it is (its default accounts are opened in the same transaction).
  'core.generate-portfolio-history': acting,
}

function metadataObject(call: Call): { type: string; id: string | null } {
  const { entity, entityId } = call.params as { entity: string; entityId: string }
  return { type: entity.replace(/s$/, ''), id: entity === 'users' && entityId === 'me' ? actingUser(call) : entityId }
}

function verificationObject(call: Call): { type: string; id: string | null } {
  return { type: 'external-account-verification', id: body<{ verification: { requestForInformation: { id: string } } }>(call).verification.requestForInformation.id }
}

function endpointObject(call: Call): { type: string; id: string | null } {
  return { type: 'webhook-endpoint', id: call.params.endpointId! }
}

/** The audit trail, oldest first. */
const trailOf = (ctx: TestContext) => ctx.database.db.selectFrom('audit_trail').selectAll().orderBy('id').execute() as Promise<AuditRow[]>

for (const engine of ENGINES) {
  describe(`audit trail [${engine}]`, () => {
    const suite = useApp(engine, { SANDBOX_RAIL_SETTLE_MS: '0', VELOCITY_MAX_MOVEMENTS: '0', SUMSUB_WEBHOOK_SECRET })
    const receivers: Receiver[] = []
    after(async () => {
      for (const receiver of receivers) await receiver.stop()
    })

    const rows = () => trailOf(suite.ctx)
    const rowsOf = async (requestId: string) => (await rows()).filter((row) => row.request_id === requestId)
    const requestIdOf = (response: TestResponse) => String(response.headers[REQUEST_ID_HEADER])

    test('a write that commits has its row, with who, which operation and which object', async () => {
      const created = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: individualUser() })
      assert.equal(created.status, 201, created.body)
      const userId = created.json<{ user: { id: string } }>().user.id
      const [row, ...others] = await rowsOf(requestIdOf(created))
      assert.equal(others.length, 0)
      assert.ok(row)
      assert.equal(row.operation, 'core.create-user')
      assert.equal(row.actor, 'client')
      assert.equal(row.client_id, suite.ctx.client.clientId)
      assert.equal(row.object_type, 'user')
      assert.equal(row.object_id, userId)

      const metadata = await suite.ctx.request({ method: 'PUT', url: `/core/users/${userId}/metadata`, headers: bearer(suite.token, userId), payload: { tier: 'gold' } })
      assert.ok(metadata.status < 300, metadata.body)
      const [metadataRow] = await rowsOf(requestIdOf(metadata))
      assert.equal(metadataRow?.operation, 'core.set-metadata')
      assert.deepEqual([metadataRow?.object_type, metadataRow?.object_id], ['user', userId])
    })

    test('a full walk-through: every write operation of the document, one row per write, none per read, refusal or replay; no secret in the trail', async () => {
      const ctx = suite.ctx
      const operations = writeOperations(ctx.app)
      const calls: Call[] = []
      /** Who each bearer token is; a client's token acts for the user its request names. */
      const principals = new Map<string, Omit<Who, 'userId'> & { userId?: string | null }>([[suite.token, { actor: 'client', clientId: ctx.client.clientId }]])
      const whoOf = (call: Call): Who | undefined => {
        const token = /^Bearer (.+)$/.exec(call.headers.authorization ?? '')?.[1]
        const principal = token === undefined ? undefined : principals.get(token)
        return principal && { actor: principal.actor, clientId: principal.clientId, userId: principal.userId !== undefined ? principal.userId : actingUser(call) }
      }

      const send = async (options: InjectOptions, wrote = true): Promise<TestResponse> => {
        const response = await ctx.request(options)
        const method = String(options.method ?? 'GET').toUpperCase()
        if (!WRITES.has(method)) return response
        const url = String(options.url)
        const found = operationOf(operations, method, url)
        assert.ok(found, `${method} ${url} is no operation of the document`)
        calls.push({
          method,
          url,
          headers: (options.headers ?? {}) as Record<string, string>,
          status: response.status,
          requestId: requestIdOf(response),
          operation: found.operation.id,
          params: found.params,
          response,
          wrote,
        })
        return response
      }
      const ok = async (options: InjectOptions, wrote = true): Promise<TestResponse> => {
        const response = await send(options, wrote)
        assert.ok(response.status >= 200 && response.status < 300, `${String(options.method)} ${String(options.url)} answered ${response.status}: ${response.body}`)
        return response
      }
      /** The fixtures of test/helpers.ts and test/money.ts, their requests walked too. */
      const via: TestContext = {
        ...ctx,
        request: (options) => send(options),
        createUser: async (token, payload = individualUser()) => (await ok({ method: 'POST', url: '/core/users', headers: { ...bearer(token), 'x-service-user-ip': USER_IP }, payload })).json<{ user: { id: string } }>().user,
      }
      const as = (userId?: string) => bearer(suite.token, userId)
      const kyc = (userId: string, process: string, payload: Record<string, unknown>) => ok({ method: 'PATCH', url: `/core/kyc/processes/${process}`, headers: as(userId), payload })
      const pendingRequest = async (userId: string) => {
        const row = await ctx.database.db.selectFrom('requests_for_information').select(['id', 'transaction_id']).where('owner_id', '=', userId).where('status', '=', 'pending').where('transaction_id', 'is not', null).orderBy('id', 'desc').executeTakeFirstOrThrow()
        return { id: row.id, transactionId: row.transaction_id! }
      }
      const secrets: string[] = []

      // The client itself: its token, reads by body, the KYC connector, the webhook portal.
      await ok({ method: 'POST', url: '/core/oauth2/token', headers: { authorization: basicAuth(ctx.client), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' })
      await ok({ method: 'POST', url: '/core/assets/_mget', headers: as(), payload: { codes: ['BTC', 'EUR'] } })
      await ok({ method: 'POST', url: '/core/networks/bitcoin/validate-address', headers: as(), payload: { address: SENDER } })
      const apiKey = 'a1b2c3d4-e5f6-7890-abcd-ef1234567890'
      const sharedSecretKey = 'f0e1d2c3-b4a5-6789-0fed-cba987654321'
      secrets.push(apiKey, sharedSecretKey, SUMSUB_WEBHOOK_SECRET)
      await ok({ method: 'PUT', url: '/kyc-connector/veriff/config', headers: as(), payload: { integrations: [{ name: 'audit', apiKey, sharedSecretKey, processes: ['identity'] }] } })
      const link = (await ok({ method: 'POST', url: '/core/webhooks/management-link', headers: as() })).json<{ managementLink: { url: string } }>().managementLink.url
      const session = await ok({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: new URLSearchParams(new URL(link).hash.slice(1)).get('link') } })
      const portalToken = session.json<{ session: { token: string } }>().session.token
      principals.set(portalToken, { actor: 'webhook-portal', clientId: null, userId: null })
      const portal = { authorization: `Bearer ${portalToken}` }
      const receiver = new Receiver()
      receivers.push(receiver)
      const since = new Date(Date.now() - 1000).toISOString()
      const endpoint = (await ok({ method: 'POST', url: `${PORTAL_API}/endpoints`, headers: portal, payload: { url: await receiver.start(), description: 'audit', eventTypes: ['core.user.created'] } })).json<{ endpoint: { id: string } }>().endpoint.id
      await ok({ method: 'PATCH', url: `${PORTAL_API}/endpoints/${endpoint}`, headers: portal, payload: { description: 'audited' } })
      const rotated = (await ok({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint}/secret/rotate`, headers: portal, payload: {} })).json<{ secret: string; previousSecret: string }>()
      secrets.push(rotated.secret, rotated.previousSecret)
      const revealed = await ctx.request({ method: 'GET', url: `${PORTAL_API}/endpoints/${endpoint}/secret`, headers: portal })
      assert.equal(revealed.status, 200, revealed.body)
      secrets.push(revealed.json<{ secret: string }>().secret)

      // A user verified for money (France: address, identity, proof of address, due diligence), and the other KYC processes.
      const userId = await verifiedUser(via, suite.token)
      await kyc(userId, 'profile', { input: { fullName: 'John Doe', birthdate: '1987-01-01' } })
      await kyc(userId, 'email', { input: { email: `audit-${randomBytes(5).toString('hex')}@example.com` }, output: { verifiedAt: PAST } })
      await kyc(userId, 'phone', { input: { phone: `+447400${100_000 + Math.floor(Math.random() * 800_000)}`, country: 'GB' } })
      const briton = (await via.createUser(suite.token)).id
      await kyc(briton, 'self-categorization-statement', { input: { answers: { investor: { type: 'restricted_investor' } } } })
      await kyc(briton, 'crypto-risk-assessment', { input: { answers: { 'loss-tolerance': { 'acceptable-loss': 'full_loss_possible' } } } })
      await kyc(briton, 'tax-details', { input: { taxResidency: { countries: ['GB'] } } })
      for (const answers of [
        { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
        { 'financial-information': { 'source-of-funds': 'salary', 'annual-income-range': '40000-60000-GBP', 'expected-annual-deposits-range': '100000-plus-GBP' } },
        { employment: { status: 'employed' } },
      ]) await kyc(briton, 'customer-due-diligence', { input: { answers } })
      const proof = await uploadedFile(via, suite.token, briton, { category: 'document', contentType: 'application/pdf' })
      await kyc(briton, 'enhanced-due-diligence', { input: { media: [{ context: 'source-of-funds-proof', fileId: proof }] } })
      await ok({ method: 'PUT', url: '/core/assets/test-helpers/skip-assets-cooldowns', headers: as(briton) })
      await ok({ method: 'POST', url: '/widgets/kyc/sessions', headers: as(briton), payload: { flow: 'verify' } })
      const portuguese = (await via.createUser(suite.token, individualUser({ address: { country: 'PT' }, termsOfService: 'general-pt-bop' }))).id
      await ok({ method: 'POST', url: '/core/terms-of-service/unique-account-number-viban/accept', headers: { ...as(portuguese), 'x-service-user-ip': USER_IP } })

      // The webhook portal's deliveries: the users' creations reached the endpoint.
      await deliverUntil(ctx, () => receiver.received.length >= 1)
      const [message] = await messagesOf(ctx, portal, endpoint)
      await ok({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint}/messages/${message!.id}/resend`, headers: portal })
      await ok({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint}/replay`, headers: portal, payload: { since } })
      await ok({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint}/test`, headers: portal, payload: { type: 'core.user.created' } })

      // Accounts, their deposit methods, deposits through the sandbox rails, a request for information answered.
      const eur = await openAccount(via, suite.token, userId, 'EUR')
      const btc = await openAccount(via, suite.token, userId, 'BTC')
      const spare = await openAccount(via, suite.token, userId, 'ETH')
      await ok({ method: 'PATCH', url: `/core/accounts/${eur}`, headers: as(userId), payload: { label: 'Euros' } })
      const iban = (await ok({ method: 'PUT', url: `/core/accounts/${eur}/deposit-method?type=bank&asset=EUR&network=sepa`, headers: as(userId) })).json<{ depositMethod: { details: { iban: string; reference?: string } } }>().depositMethod.details
      await ok({ method: 'POST', url: '/core/accounts/test-helpers/bank-deposits', headers: as(userId), payload: { network: 'sepa', iban: iban.iban, asset: 'EUR', amount: '1000', ...(iban.reference ? { reference: iban.reference } : {}) } })
      const address = (await ok({ method: 'PUT', url: `/core/accounts/${btc}/deposit-method?type=crypto&asset=BTC&network=bitcoin`, headers: as(userId) })).json<{ depositMethod: { details: { address: string } } }>().depositMethod.details.address
      const chainDeposit = () => ok({ method: 'POST', url: '/core/accounts/test-helpers/crypto-deposits', headers: as(userId), payload: { network: 'bitcoin', address, asset: 'BTC', amount: '0.2', remitter: { addresses: [SENDER] } } })
      await chainDeposit()
      await ctx.services.worker.drain()
      const held = await pendingRequest(userId)
      await ok({ method: 'PUT', url: `/core/transactions/${held.transactionId}/requests-for-information/${held.id}`, headers: as(userId), payload: { data: FUNDING_ORIGINATOR } })
      await ctx.services.worker.drain()

      // A trade, by both quote routes, committed with an idempotency key and replayed; reads of the portfolio by body.
      const quote = await quoted(via, suite.token, userId, quoteBody(eur, btc, 'EUR', '100'))
      await ok({ method: 'POST', url: '/transactions/quote', headers: as(userId), payload: quoteBody(eur, btc, 'EUR', '10') })
      const key = `audit-${randomBytes(6).toString('hex')}`
      const first = await commit(via, suite.token, userId, quote.id, { key })
      assert.equal(first.status, 201, first.body)
      const trade = first.json<{ transaction: { id: string } }>().transaction.id
      const replay = await send({ method: 'POST', url: '/core/transactions', headers: { ...as(userId), 'idempotency-key': key }, payload: { quoteId: quote.id } }, false)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      await ctx.services.worker.drain()
      await ok({ method: 'POST', url: '/core/portfolio/accounts/_mget/performance', headers: as(userId), payload: { ids: [btc, eur] } })
      await ok({ method: 'POST', url: '/core/portfolio/assets/_mget/performance', headers: as(userId), payload: { codes: ['BTC', 'EUR'] } })
      const historian = await verifiedUser(via, suite.token)
      await ok({ method: 'POST', url: '/core/portfolio/test-helpers/history', headers: as(historian), payload: { months: 2, seed: 3 } })

      // External accounts: a card (its number and security code are secrets), a verified wallet, a bank account unlinked.
      const card = '4242424242424242'
      const securityCode = '737'
      secrets.push(card)
      const linkExternal = async (payload: Record<string, unknown>) => (await ok({ method: 'POST', url: '/core/external-accounts', headers: as(userId), payload })).json<{ externalAccount: { id: string } }>().externalAccount.id
      const cardId = await linkExternal({ type: 'card', label: 'Visa', number: card, securityCode, expiryDate: { month: 12, year: new Date().getUTCFullYear() + 2 } })
      await ok({ method: 'PATCH', url: `/core/external-accounts/${cardId}`, headers: as(userId), payload: { label: 'Renamed' } })
      const wallet = await linkExternal({ type: 'crypto', asset: 'BTC', network: 'bitcoin', label: 'Wallet', address: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx' })
      await ok({ method: 'POST', url: `/core/external-accounts/${wallet}/verifications`, headers: as(userId), payload: { level: 'declared' } })
      await ok({ method: 'PUT', url: `/core/external-accounts/${wallet}/verifications/declared`, headers: as(userId), payload: { proof: { isVASP: false, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true } } })
      const bank = await linkExternal({ type: 'bank', asset: 'EUR', network: 'sepa', label: 'SEPA', iban: 'DE67370400440532010001', bic: 'COBADEFFXXX' })
      await ok({ method: 'DELETE', url: `/core/external-accounts/${bank}`, headers: as(userId) })

      // Widget sessions: payment; travel rule (a withdrawal form opens its request, a deposit form's widget answers).
      await ok({ method: 'POST', url: '/widgets/payment/sessions', headers: as(userId), payload: { flow: 'select-for-deposit' } })
      const withdrawal = await quoted(via, suite.token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: DESTINATION }, denomination: { asset: 'BTC', amount: '0.1' } })
      await ok({ method: 'POST', url: '/widgets/travel-rule/sessions', headers: as(userId), payload: { flow: 'withdrawal-form', data: { quoteId: withdrawal.id } } })
      await chainDeposit()
      await ctx.services.worker.drain()
      const second = await pendingRequest(userId)
      const form = await ok({ method: 'POST', url: '/widgets/travel-rule/sessions', headers: as(userId), payload: { flow: 'deposit-form', data: { requestForInformationId: second.id } } }, false)
      const widgetToken = form.json<{ session: { token: string } }>().session.token
      principals.set(widgetToken, { actor: 'widget-session', clientId: ctx.client.clientId, userId })
      await ok({ method: 'PUT', url: '/widgets/travel-rule/sessions/current/request-for-information', headers: bearer(widgetToken), payload: { data: FUNDING_ORIGINATOR } })

      // Metadata of every kind of entity: set, patched, deleted.
      await ok({ method: 'PUT', url: '/core/users/me/metadata', headers: as(userId), payload: { tier: 'gold' } })
      await ok({ method: 'PUT', url: `/core/accounts/${eur}/metadata`, headers: as(userId), payload: { purpose: 'savings' } })
      await ok({ method: 'PATCH', url: `/core/accounts/${eur}/metadata`, headers: { ...as(userId), 'content-type': JSON_PATCH }, payload: JSON.stringify([{ op: 'add', path: '/tier', value: 'gold' }]) })
      await ok({ method: 'PUT', url: `/core/external-accounts/${cardId}/metadata`, headers: as(userId), payload: { nickname: 'everyday' } })
      await ok({ method: 'PUT', url: `/core/transactions/${trade}/metadata`, headers: as(userId), payload: { reason: 'savings' } })
      await ok({ method: 'PUT', url: `/core/files/${proof}/metadata`, headers: as(briton), payload: { kind: 'payslip' } })
      await ok({ method: 'DELETE', url: '/core/users/me/metadata', headers: as(userId) })

      // KYC connector ingestions, and the providers' callbacks (signed with the connector's secrets, by no client).
      const sessionId = `${randomUUID().slice(0, 24)}${randomBytes(6).toString('hex')}`
      await ok({ method: 'POST', url: '/kyc-connector/veriff/ingestions', headers: as(briton), payload: { processes: ['identity'], sessions: [{ sessionId, integrationName: 'audit' }] } })
      await ok({ method: 'POST', url: '/kyc-connector/sumsub/ingestions', headers: as(briton), payload: { shareToken: `_act-sbx-jwt-${randomBytes(12).toString('hex')}`, processes: ['profile'] } })
      const veriffCallback = JSON.stringify({ status: 'success', verification: { id: sessionId, status: 'approved', code: 9001 } })
      await ok({ method: 'POST', url: '/kyc-connector/veriff/callbacks', headers: { 'content-type': 'application/json', 'x-auth-client': apiKey, 'x-hmac-signature': veriffSignature(sharedSecretKey, veriffCallback) }, payload: veriffCallback })
      const sumsubCallback = JSON.stringify({ applicantId: randomBytes(12).toString('hex'), type: 'applicantReviewed', reviewStatus: 'completed', reviewResult: { reviewAnswer: 'GREEN' } })
      await ok({ method: 'POST', url: '/kyc-connector/sumsub/callbacks', headers: { 'content-type': 'application/json', 'x-payload-digest': sumsubDigest(SUMSUB_WEBHOOK_SECRET, sumsubCallback), 'x-payload-digest-alg': 'HMAC_SHA256_HEX' }, payload: sumsubCallback })

      // Ends: an account archived, an endpoint deleted, a user deleted.
      await ok({ method: 'DELETE', url: `/core/accounts/${spare}`, headers: as(userId) })
      await ok({ method: 'DELETE', url: `${PORTAL_API}/endpoints/${endpoint}`, headers: portal })
      await ok({ method: 'DELETE', url: '/core/users/me', headers: as(portuguese), payload: { review: { reason: 'closure-per-user-request' } } })

      // Each write has exactly its row, naming who, the operation and the object; reads, replays and unattributed writes none.
      const trail = await rows()
      const byRequest = new Map<string, AuditRow[]>()
      for (const row of trail) byRequest.set(row.request_id, [...(byRequest.get(row.request_id) ?? []), row])
      for (const call of calls) {
        const label = `${call.operation} (${call.method} ${call.url}) answered ${call.status}`
        const found = byRequest.get(call.requestId) ?? []
        const audited = call.status < 300 && call.wrote && !(call.operation in READS) && !(call.operation in UNATTRIBUTED)
        if (!audited) {
          assert.equal(found.length, 0, `${label}: it wrote nothing, yet has ${found.length} audit rows`)
          continue
        }
        assert.equal(found.length, 1, `${label}: ${found.length} audit rows`)
        const row = found[0]!
        const who = whoOf(call)
        assert.ok(who, `${label}: the walk does not know its credential`)
        assert.deepEqual(
          { operation: row.operation, method: row.method, organization: row.organization_id, actor: row.actor, client: row.client_id, user: row.user_id },
          { operation: call.operation, method: call.method, organization: ctx.client.organizationId, actor: who.actor, client: who.clientId, user: who.userId },
          label,
        )
        const objectOf = OBJECTS[call.operation]
        assert.ok(objectOf, `${label}: add what its row names as its object to OBJECTS`)
        const object = objectOf(call)
        assert.ok(row.object_type !== null && row.object_id !== null, `${label}: its row names no object`)
        assert.equal(row.object_type, object.type, `${label}: object type`)
        if (object.id !== null) assert.equal(row.object_id, object.id, `${label}: object id`)
      }
      // Rows only for the walk's writes (and the first test's): nothing else wrote in this organization meanwhile.
      const walked = new Set(calls.map((call) => call.requestId))
      const strays = trail.filter((row) => !walked.has(row.request_id) && row.operation !== 'core.create-user' && row.operation !== 'core.set-metadata')
      assert.deepEqual(strays.map((row) => row.operation), [])
      // A deposit method's row names the method the account got.
      for (const row of trail.filter((row) => row.operation === 'core.setup-account-deposit-method')) {
        const method = await ctx.database.db.selectFrom('deposit_methods').select('account_id').where('id', '=', row.object_id!).executeTakeFirst()
        assert.ok(method && [eur, btc].includes(method.account_id), `deposit method ${row.object_id}`)
      }

      // Every write operation of the document was walked (successfully), or is listed with why it leaves no row.
      for (const operation of operations) {
        const successes = calls.filter((call) => call.operation === operation.id && call.status < 300)
        assert.ok(successes.length > 0, `${operation.id} (${operation.method} ${operation.template}) is not walked: call it in the walk-through`)
        if (operation.id in READS || operation.id in UNATTRIBUTED) continue
        assert.ok(operation.id in OBJECTS, `${operation.id} writes: add its object to OBJECTS, or list it in READS with why it changes nothing`)
        assert.ok(successes.some((call) => call.wrote), `${operation.id}: no call of the walk wrote`)
      }
      for (const id of [...Object.keys(READS), ...Object.keys(UNATTRIBUTED), ...Object.keys(OBJECTS)]) {
        assert.ok(operations.some((operation) => operation.id === id), `${id} is listed but no longer an operation of the document`)
      }

      // No secret of the walk, anywhere in the trail.
      const text = JSON.stringify(trail)
      for (const secret of secrets) assert.ok(!text.includes(secret), 'a secret of the walk is in the audit trail')
      for (const row of trail) assert.ok(!Object.values(row).includes(securityCode), 'the security code is in the audit trail')
    })

    test('refusals of every kind leave no row: invalid, unauthenticated, out of scope, another organization\'s, conflicting, expired', async () => {
      const ctx = suite.ctx
      const before = (await rows()).length
      const userId = (await ctx.createUser(suite.token)).id
      const account = await openAccount(ctx, suite.token, userId, 'EUR')
      const other = await ctx.newClient()
      const otherToken = await ctx.token(other)
      const foreigner = (await ctx.createUser(otherToken)).id
      const foreignAccount = await openAccount(ctx, otherToken, foreigner, 'EUR')
      const narrowToken = await ctx.token(ctx.client, 'core.users:read core.accounts:read')
      const refusals: [number, InjectOptions][] = [
        [400, { method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: { type: 'individual' } }],
        [400, { method: 'PATCH', url: `/core/accounts/${account}`, headers: bearer(suite.token, userId), payload: { label: 42 } }],
        [401, { method: 'POST', url: '/core/users', headers: { authorization: 'Bearer not-a-token' }, payload: individualUser() }],
        [401, { method: 'DELETE', url: `/core/accounts/${account}`, headers: {} }],
        [403, { method: 'POST', url: '/core/accounts', headers: bearer(narrowToken, userId), payload: { label: 'x', asset: 'BTC' } }],
        [403, { method: 'PUT', url: '/kyc-connector/veriff/config', headers: bearer(narrowToken), payload: { integrations: [] } }],
        [404, { method: 'PATCH', url: `/core/accounts/${foreignAccount}`, headers: bearer(suite.token, userId), payload: { label: 'mine' } }],
        [404, { method: 'DELETE', url: `/core/accounts/${foreignAccount}`, headers: bearer(suite.token, userId) }],
        [404, { method: 'PUT', url: `/core/accounts/${foreignAccount}/metadata`, headers: bearer(suite.token, userId), payload: { stolen: true } }],
        [404, { method: 'POST', url: '/core/accounts', headers: bearer(suite.token, foreigner), payload: { label: 'x', asset: 'BTC' } }],
        [404, { method: 'DELETE', url: '/core/users/me', headers: bearer(suite.token, UNKNOWN_ID), payload: { review: { reason: 'closure-per-user-request' } } }],
        [404, { method: 'POST', url: '/core/accounts', headers: bearer(suite.token, UNKNOWN_ID), payload: { label: 'x', asset: 'BTC' } }],
        [409, { method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: individualUser({ email: (await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(suite.token, userId) })).json<{ user: { email: string } }>().user.email }) }],
      ]
      const responses: TestResponse[] = []
      for (const [status, options] of refusals) {
        const response = await ctx.request(options)
        assert.equal(response.status, status, `${String(options.method)} ${String(options.url)}: ${response.body}`)
        responses.push(response)
      }

      // A request for information that expired meanwhile: the answer is refused (409), though the request moves to expired.
      const verified = await verifiedUser(ctx, suite.token)
      const btc = await openAccount(ctx, suite.token, verified, 'BTC')
      const { transactionId } = await ctx.services.deposits.record(ctx.database.db, {
        organizationId: ctx.client.organizationId,
        userId: verified,
        accountId: btc,
        asset: 'BTC',
        amount: '0.2',
        network: 'bitcoin',
        source: { type: 'crypto-address', network: 'bitcoin', address: SENDER },
        reference: `audit-${randomBytes(6).toString('hex')}`,
      })
      await ctx.services.worker.drain()
      const request = await ctx.database.db.selectFrom('requests_for_information').select('id').where('transaction_id', '=', transactionId).executeTakeFirstOrThrow()
      await ctx.database.db.updateTable('requests_for_information').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', request.id).execute()
      const expired = await ctx.request({ method: 'PUT', url: `/core/transactions/${transactionId}/requests-for-information/${request.id}`, headers: bearer(suite.token, verified), payload: { data: FUNDING_ORIGINATOR } })
      assert.equal(expired.status, 409, expired.body)
      responses.push(expired)
      assert.equal((await ctx.database.db.selectFrom('requests_for_information').select('status').where('id', '=', request.id).executeTakeFirstOrThrow()).status, 'expired')

      // The webhook portal's refusals.
      const link = (await ctx.request({ method: 'POST', url: '/core/webhooks/management-link', headers: bearer(suite.token) })).json<{ managementLink: { url: string } }>().managementLink.url
      const opened = await ctx.request({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: new URLSearchParams(new URL(link).hash.slice(1)).get('link') } })
      const portal = { authorization: `Bearer ${opened.json<{ session: { token: string } }>().session.token}` }
      for (const [status, options] of [
        [404, { method: 'PATCH', url: `${PORTAL_API}/endpoints/${UNKNOWN_ID}`, headers: portal, payload: { description: 'x' } }],
        [400, { method: 'POST', url: `${PORTAL_API}/endpoints`, headers: portal, payload: { url: 'ftp://example.com' } }],
        [401, { method: 'POST', url: `${PORTAL_API}/endpoints`, headers: bearer(suite.token), payload: { url: 'https://example.com/hooks' } }],
      ] as const) {
        const response = await ctx.request(options)
        assert.equal(response.status, status, response.body)
        responses.push(response)
      }

      const trail = await rows()
      for (const response of responses) assert.deepEqual(trail.filter((row) => row.request_id === requestIdOf(response)), [], response.body)
      // The refusals left nothing; the setup's writes (two users and their accounts, the KYC, the link) their rows.
      const refused = new Set(responses.map(requestIdOf))
      assert.ok(trail.slice(before).every((row) => !refused.has(row.request_id)))
    })

    test('two writes of one request at once leave its one row, whichever of them changes rows', async () => {
      const { ctx } = suite
      const db = ctx.database.db
      const userIds: string[] = []
      for (let i = 0; i < 2; i++) {
        const created = await ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: individualUser() })
        assert.equal(created.status, 201, created.body)
        userIds.push(created.json<{ user: { id: string } }>().user.id)
      }
      const [first, second] = userIds as [string, string]
      // On PostgreSQL the slow write sleeps once (a one-time filter) and is still in flight when the other starts, each
      // on a connection of its own; the embedded engine has one connection, so there they run one after the other.
      const slowly = engine === 'postgres' ? sql<boolean>`(select pg_sleep(0.3)) is not null` : sql<boolean>`true`
      const touch = (userId: string) => db.updateTable('users').set({ updated_at: new Date() }).where('id', '=', userId).returning('id')
      const shortly = () => new Promise((resolve) => setTimeout(resolve, 50))
      const entry = (requestId: string) => ({
        organizationId: ctx.client.organizationId,
        actor: 'client' as const,
        clientId: ctx.client.clientId,
        userId: null,
        operation: 'core.update-user',
        method: 'PATCH',
        route: '/core/users/:user',
        requestId,
      })

      // The slow write changes nothing; the other, started meanwhile, changes a user: the row is the other's.
      const missed = randomUUID()
      await runAudited(entry(missed), null, () => Promise.all([touch(UNKNOWN_ID).where(slowly).execute(), shortly().then(() => touch(first).execute())]))
      assert.equal((await rowsOf(missed)).length, 1, 'the write that changed a user has its row')

      // Both change a user: one row for the request.
      const both = randomUUID()
      await runAudited(entry(both), null, () => Promise.all([touch(first).where(slowly).execute(), shortly().then(() => touch(second).execute())]))
      assert.equal((await rowsOf(both)).length, 1, 'one row a request')

      // Neither changes anything: no row.
      const neither = randomUUID()
      await runAudited(entry(neither), null, () => Promise.all([touch(UNKNOWN_ID).where(slowly).execute(), shortly().then(() => touch(UNKNOWN_ID).execute())]))
      assert.equal((await rowsOf(neither)).length, 0)
    })

    test('the trail is append-only', async () => {
      await assert.rejects(suite.ctx.database.db.updateTable('audit_trail').set({ operation: 'forged' }).execute(), /append-only/)
      await assert.rejects(suite.ctx.database.db.deleteFrom('audit_trail').execute(), /append-only/)
      await assert.rejects(sql`truncate audit_trail`.execute(suite.ctx.database.db), /append-only/)
    })
  })

  describe(`tessera audit [${engine}]`, () => {
    const cleanups: (() => Promise<void>)[] = []
    after(async () => {
      for (const cleanup of cleanups) await cleanup()
    })

    test('lists the trail as JSON lines, filtered by organization, client, user, operation, object, request and time, in pages; refuses bad input', async () => {
      const { env, dataDir, cleanup } = await deployment(engine, 'audit_cli')
      cleanups.push(cleanup)
      const config = testConfig({ ...env, DATA_DIR: dataDir })
      const database = await openDatabase(config)
      await migrateToLatest(database)
      const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(dataDir, config) })
      const ctx = localContext(built.app, built.services, database)
      const tokenOf = async (client: { clientId: string; clientSecret: string }) =>
        (await ctx.request({ method: 'POST', url: '/core/oauth2/token', headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' })).json<{ access_token: string }>().access_token
      const first = await built.services.clients.create({ name: 'First', scopes: '*' })
      const second = await built.services.clients.create({ name: 'Second', scopes: '*' })
      const [firstToken, secondToken] = [await tokenOf(first), await tokenOf(second)]
      const alice = (await ctx.createUser(firstToken, individualUser())).id
      const start = new Date()
      await new Promise((resolve) => setTimeout(resolve, 5))
      const account = (await ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(firstToken, alice), payload: { label: 'Mine', asset: 'EUR' } })).json<{ account: { id: string } }>().account.id
      const renamed = await ctx.request({ method: 'PATCH', url: `/core/accounts/${account}`, headers: bearer(firstToken, alice), payload: { label: 'Renamed' } })
      assert.equal(renamed.status, 200, renamed.body)
      await new Promise((resolve) => setTimeout(resolve, 5))
      const bob = (await ctx.createUser(secondToken, individualUser())).id
      await built.app.close()

      interface Entry { id: string; at: string; organizationId: string; actor: string; clientId: string | null; userId: string | null; operation: string; object: { type: string; id: string } | null; requestId: string }
      const audit = async (...args: string[]): Promise<Entry[]> => {
        const run = await cli(['audit', ...args], env)
        assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`)
        return run.stdout.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Entry)
      }
      const all = await audit()
      assert.deepEqual(all.map((entry) => entry.operation), ['core.create-user', 'core.create-account', 'core.update-account', 'core.create-user'])
      assert.deepEqual(all.map((entry) => entry.object?.id), [alice, account, account, bob])
      assert.deepEqual(Object.keys(all[0]!).sort(), ['actor', 'at', 'clientId', 'id', 'method', 'object', 'operation', 'organizationId', 'requestId', 'route', 'userId'])
      assert.deepEqual([all[1]!.actor, all[1]!.clientId, all[1]!.userId], ['client', first.clientId, alice])

      const ids = (entries: Entry[]) => entries.map((entry) => entry.id)
      // Each filter excludes a row the others let through (every run starts a process: they are few).
      assert.deepEqual(ids(await audit('--organization', first.organizationId, '--since', start.toISOString())), ids(all.slice(1, 3)))
      assert.deepEqual(ids(await audit('--operation', 'core.create-user', '--until', start.toISOString())), ids(all.slice(0, 1)))
      assert.deepEqual(ids(await audit('--object', account, '--request', String(renamed.headers[REQUEST_ID_HEADER]))), ids(all.slice(2, 3)))
      assert.deepEqual(ids(await audit('--client', first.clientId, '--user', alice, '--until', all[3]!.at)), ids(all.slice(1, 3)))
      // Pages: --limit, then --after the last id printed.
      const page = await audit('--limit', '3')
      assert.deepEqual(ids(page), ids(all.slice(0, 3)))
      assert.deepEqual(ids(await audit('--limit', '3', '--after', page.at(-1)!.id)), ids(all.slice(3)))

      // Refused before the database is opened: at once, side by side.
      const refusals = [
        [['--organization', 'acme'], /--organization must be a UUID/],
        [['--after', 'last'], /--after must be a UUID/],
        [['--since', 'yesterday'], /--since must be a time/],
        [['--limit', '0'], /--limit must be an integer/],
        [['--limit', 'many'], /--limit must be an integer/],
        [['everything'], /Unexpected arguments/],
      ] as const
      const runs = await Promise.all(refusals.map(([args]) => cli(['audit', ...args], env)))
      refusals.forEach(([args, pattern], i) => {
        const run = runs[i]!
        assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`)
        assert.match(run.stderr, pattern)
        assert.equal(run.stdout, '')
      })
    })
  })
}

describe('upgrading the trail to one row per request', () => {
  test('the migration names a request with two rows and refuses; after the documented clean-up it runs', async (t) => {
    const database = await openDatabase({ ...testConfig(), databaseUrl: null, dataDir: null })
    t.after(() => database.close())
    const migrated = await database.withSession((db) => new Migrator({ db, provider: migrationProvider }).migrateTo('0022_audit_trail'))
    assert.equal(migrated.error, undefined)
    const requestId = randomUUID()
    const row = (id: string) => ({
      id,
      organization_id: randomUUID(),
      actor: 'client',
      client_id: 'a-client',
      user_id: null,
      operation: 'core.create-user',
      method: 'POST',
      route: '/core/users',
      object_type: null,
      object_id: null,
      request_id: requestId,
      at: new Date(),
    })
    const [first, second] = ['0190a8c1-0000-7000-8000-000000000001', '0190a8c1-0000-7000-8000-000000000002']
    await database.db.insertInto('audit_trail').values([row(first), row(second)]).execute()
    await assert.rejects(migrateToLatest(database), new RegExp(`more than one row for some requests: ${requestId} \\(2 rows\\)`))

    // docs/audit-trail.md, "Upgrading to one row per request": keep the earliest row of each request.
    await sql`alter table audit_trail disable trigger audit_trail_append_only`.execute(database.db)
    await sql`delete from audit_trail a using audit_trail b where a.request_id = b.request_id and a.id > b.id`.execute(database.db)
    await sql`alter table audit_trail enable trigger audit_trail_append_only`.execute(database.db)
    assert.deepEqual(await migrateToLatest(database), ['0023_audit_trail_one_row_per_request'])
    assert.deepEqual((await database.db.selectFrom('audit_trail').select('id').execute()).map((r) => r.id), [first])
    await assert.rejects(database.db.insertInto('audit_trail').values(row(randomUUID())).execute(), /audit_trail_request/)
  })
})
