import assert from 'node:assert/strict'
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { Subject } from '../src/http/principal.ts'
import { TokenSigner } from '../src/modules/auth/tokens.ts'
import { bearer, ENGINES, individualUser, PUBLIC_URL, startApp, uploadedFile, USER_IP, type TestContext, type TestResponse } from './helpers.ts'

interface RouteCase {
  operationId: string
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  /** The scope the route requires; none for reference data, which any token may read. */
  scope?: string
  subjects: Subject[]
  success: number
  headers?: Record<string, string>
  body?: () => Record<string, unknown>
  /** Prepares what the route acts on (e.g. metadata to read), for the user it will act for. */
  prepare?: (ctx: TestContext, token: string, userId: string) => Promise<void>
  /** A body that breaks the schema, with the violation it must report. */
  invalidBody?: { body: unknown; property: string; rule: string }
  /**
   * For routes only a widget session's token succeeds on: the session token for the user (sent alone, without
   * X-On-Behalf-Of, as the widget does). Any other token is checked as for every route.
   */
  sessionToken?: (ctx: TestContext, token: string, userId: string) => Promise<string>
}

/** Every operation that requires a token; a test below fails when the document has one not listed here. */
const ROUTES: RouteCase[] = [
  {
    operationId: 'core.create-webhook-management-link',
    method: 'POST',
    url: '/core/webhooks/management-link',
    scope: 'core.webhooks:management-link',
    subjects: ['client'],
    success: 200,
  },
  {
    operationId: 'core.create-user',
    method: 'POST',
    url: '/core/users',
    scope: 'core.users:create',
    subjects: ['client'],
    success: 201,
    headers: { 'x-service-user-ip': USER_IP },
    body: () => individualUser(),
    invalidBody: { body: { ...individualUser(), email: 42 }, property: 'email', rule: 'type' },
  },
  {
    operationId: 'core.get-user',
    method: 'GET',
    url: '/core/users/me',
    scope: 'core.users:read',
    subjects: ['user:business', 'user:individual'],
    success: 200,
  },
  {
    operationId: 'core.delete-user',
    method: 'DELETE',
    url: '/core/users/me',
    scope: 'core.users:delete',
    subjects: ['user:business', 'user:individual'],
    success: 204,
    body: () => ({ review: { reason: 'closure-per-user-request' } }),
    invalidBody: { body: { review: { reason: 'because' } }, property: 'review.reason', rule: 'enum' },
  },
  {
    operationId: 'core.get-metadata',
    method: 'GET',
    url: '/core/users/me/metadata',
    scope: 'core.users.metadata:read',
    subjects: ['user:business', 'user:individual'],
    success: 200,
    prepare: putMetadata,
  },
  {
    operationId: 'core.set-metadata',
    method: 'PUT',
    url: '/core/users/me/metadata',
    scope: 'core.users.metadata:write',
    subjects: ['user:business', 'user:individual'],
    success: 201,
    body: () => ({ externalId: 'crm-1' }),
    invalidBody: { body: [1, 2], property: '', rule: 'type' },
  },
  {
    operationId: 'core.update-metadata',
    method: 'PATCH',
    url: '/core/users/me/metadata',
    scope: 'core.users.metadata:write',
    subjects: ['user:business', 'user:individual'],
    success: 200,
    headers: { 'content-type': 'application/json-patch+json' },
    body: () => [{ op: 'add', path: '/tier', value: 'gold' }] as unknown as Record<string, unknown>,
    prepare: putMetadata,
    invalidBody: { body: { op: 'add' }, property: '', rule: 'type' },
  },
  {
    operationId: 'core.delete-metadata',
    method: 'DELETE',
    url: '/core/users/me/metadata',
    scope: 'core.users.metadata:write',
    subjects: ['user:business', 'user:individual'],
    success: 204,
    prepare: putMetadata,
  },
]

ROUTES.push(
  ...(['GET /core/networks', 'GET /core/networks/bitcoin'] as const).map((line, i) => ({
    operationId: i === 0 ? 'core.list-networks' : 'core.get-network',
    method: 'GET' as const,
    url: line.split(' ')[1]!,
    subjects: ['client', 'user:business', 'user:individual'] as Subject[],
    success: 200,
  })),
  ...(['GET /core/countries', 'GET /core/countries/GB'] as const).map((line, i) => ({
    operationId: i === 0 ? 'core.list-countries' : 'core.get-country',
    method: 'GET' as const,
    url: line.split(' ')[1]!,
    subjects: ['client', 'user:business', 'user:individual'] as Subject[],
    success: 200,
  })),
  ...([
    ['core.list-assets', 'GET /core/assets'],
    ['core.get-asset', 'GET /core/assets/BTC'],
    ['core.get-asset-rates', 'GET /core/assets/BTC/rates'],
    ['core.get-asset-historical-rates', 'GET /core/assets/BTC/historical-rates'],
  ] as const).map(([operationId, line]) => ({
    operationId,
    method: 'GET' as const,
    url: line.split(' ')[1]!,
    subjects: ['client', 'user:business', 'user:individual'] as Subject[],
    success: 200,
  })),
  {
    operationId: 'core.get-many-assets',
    method: 'POST',
    url: '/core/assets/_mget',
    subjects: ['client', 'user:business', 'user:individual'],
    success: 200,
    body: () => ({ codes: ['BTC', 'GBP'] }),
    invalidBody: { body: { codes: 'BTC' }, property: 'codes', rule: 'type' },
  },
  {
    operationId: 'core.skip-assets-cooldowns',
    method: 'PUT',
    url: '/core/assets/test-helpers/skip-assets-cooldowns',
    scope: 'core.assets:use-test-helpers',
    subjects: ['user:individual', 'user:business'],
    success: 204,
  },
  {
    operationId: 'core.list-rails',
    method: 'GET',
    url: '/core/rails',
    subjects: ['client', 'user:business', 'user:individual'],
    success: 200,
  },
  {
    operationId: 'core.validate-network-address',
    method: 'POST',
    url: '/core/networks/bitcoin/validate-address',
    subjects: ['client', 'user:business', 'user:individual'],
    success: 200,
    body: () => ({ address: 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv' }),
    invalidBody: { body: { address: 42 }, property: 'address', rule: 'type' },
  },
)

// The identity-verification provider configuration (kyc-connector). PUT comes first: GET finds the
// configuration the PUT case left in the suite's organization.
ROUTES.push(
  {
    operationId: 'kyc-connector.set-veriff-config',
    method: 'PUT',
    url: '/kyc-connector/veriff/config',
    scope: 'kyc-connector.veriff.config:write',
    subjects: ['client'],
    success: 200,
    body: () => ({ integrations: [{ name: 'integration-abc123', apiKey: 'a1b2c3d4-e5f6-7890', sharedSecretKey: 'f0e1d2c3-b4a5-6789', processes: ['profile', 'identity'] }] }),
    invalidBody: { body: { integrations: [{ name: 'integration-abc123', processes: ['selfie'] }] }, property: 'integrations[0].processes[0]', rule: 'enum' },
  },
  {
    operationId: 'kyc-connector.get-veriff-config',
    method: 'GET',
    url: '/kyc-connector/veriff/config',
    scope: 'kyc-connector.veriff.config:read',
    subjects: ['client'],
    success: 200,
  },
  // Ingestions import a user's verification (test/kyc-ingestions.test.ts): the Veriff one reads its session with the
  // integration the configuration above left; every creation names a session or share token of its own.
  {
    operationId: 'kyc-connector.create-veriff-ingestion',
    method: 'POST',
    url: '/kyc-connector/veriff/ingestions',
    scope: 'kyc-connector.veriff.ingestions:create',
    subjects: ['user:individual'],
    success: 201,
    body: () => ({ sessions: [{ sessionId: randomUUID(), integrationName: 'integration-abc123' }] }),
    invalidBody: { body: { sessions: [{ sessionId: 'not-a-session', integrationName: 'integration-abc123' }] }, property: 'sessions[0].sessionId', rule: 'pattern' },
  },
  {
    operationId: 'kyc-connector.create-sumsub-ingestion',
    method: 'POST',
    url: '/kyc-connector/sumsub/ingestions',
    scope: 'kyc-connector.sumsub.ingestions:create',
    subjects: ['user:individual'],
    success: 201,
    body: () => ({ shareToken: `_act-sbx-jwt-${randomBytes(12).toString('hex')}` }),
    invalidBody: { body: { shareToken: 42 }, property: 'shareToken', rule: 'type' },
  },
  ...(['veriff', 'sumsub'] as const).flatMap((provider): RouteCase[] => [
    {
      operationId: `kyc-connector.list-${provider}-ingestions`,
      method: 'GET',
      url: `/kyc-connector/${provider}/ingestions`,
      scope: `kyc-connector.${provider}.ingestions:read`,
      subjects: ['user:individual'],
      success: 200,
    },
    {
      operationId: `kyc-connector.get-${provider}-ingestion`,
      method: 'GET',
      get url() {
        return `/kyc-connector/${provider}/ingestions/${preparedIngestions[provider] ?? '0190a8c1-0000-7000-8000-000000000000'}`
      },
      scope: `kyc-connector.${provider}.ingestions:read`,
      subjects: ['user:individual'],
      success: 200,
      prepare: async (ctx, _token, userId) => {
        const body = provider === 'veriff'
          ? { sessions: [{ sessionId: randomUUID(), integrationName: 'integration-abc123' }] }
          : { shareToken: `_act-sbx-jwt-${randomBytes(12).toString('hex')}` }
        const created = await ctx.request({ method: 'POST', url: `/kyc-connector/${provider}/ingestions`, headers: bearer(await ctx.token(), userId), payload: body })
        assert.equal(created.status, 201, created.body)
        preparedIngestions[provider] = created.json<{ ingestion: { id: string } }>().ingestion.id
      },
    },
  ]),
)
const preparedIngestions: Partial<Record<'veriff' | 'sumsub', string>> = {}

let kycEvidenceFileId: string | undefined
// KYC: the overview and one update per process, each with its own scope; all act for an individual user. The
// overview's scope, core.kyc:read, is the one this matrix grants its narrow clients, so test/kyc.test.ts checks it.
ROUTES.push(
  { operationId: 'core.get-kyc-overview', method: 'GET', url: '/core/kyc?detailed=selfCategorizationStatement', subjects: ['user:individual'], success: 200 },
  ...([
    ['profile', { input: { fullName: 'John Doe' } }, { input: { fullName: 42 } }, 'input.fullName', 'type'],
    ['address', { input: { address: { city: 'Manchester' } } }, { input: { address: { city: 5 } } }, 'input.address.city', 'type'],
    ['email', { input: { email: 'kyc-{n}@example.com' } }, { input: { email: 'not-an-email' } }, 'input.email', 'format'],
    ['phone', { input: { phone: '+447400123456', country: 'GB' } }, { input: { phone: '0740', country: 'GB' } }, 'input.phone', 'pattern'],
    [
      'identity',
      { type: 'electronic-verification', input: { data: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', citizenshipCountry: 'GB' } } },
      { type: 'electronic-verification', input: { data: { givenName: 1, birthdate: '1987-01-01', citizenshipCountry: 'GB' } } },
      'input.data.givenName',
      'type',
    ],
    [
      'proof-of-address',
      { type: 'electronic-verification', input: { data: { givenName: 'John', address: { country: 'GB', line1: '1 High Street' } } } },
      { type: 'electronic-verification', input: { data: { givenName: 'John', address: { country: 'gb' } } } },
      'input.data.address.country',
      'pattern',
    ],
    ['customer-due-diligence', { input: { answers: { employment: { status: 'employed' } } } }, { input: { answers: {} } }, 'input.answers', 'minProperties'],
    [
      'crypto-risk-assessment',
      { input: { answers: { 'loss-tolerance': { 'acceptable-loss': 'full_loss_possible' } } } },
      { input: { formId: 'x', answers: { 'loss-tolerance': {} } } },
      'input.formId',
      'format',
    ],
    [
      'self-categorization-statement',
      { input: { answers: { investor: { type: 'restricted_investor' } } } },
      { input: { answers: { investor: { type: 'restricted_investor' }, 'investor-profile': {} } } },
      'input.answers',
      'maxProperties',
    ],
    ['tax-details', { input: { taxResidency: { countries: ['GB'] } } }, { input: {} }, 'input', 'minProperties'],
  ] as const).map(([process, body, invalid, property, rule]) => ({
    operationId: `core.update-kyc-${process}`,
    method: 'PATCH' as const,
    url: `/core/kyc/processes/${process}`,
    scope: `core.kyc.${process}:update`,
    subjects: ['user:individual'] as Subject[],
    success: 200,
    body: () => JSON.parse(JSON.stringify(body).replace('{n}', Math.random().toString(36).slice(2))) as Record<string, unknown>,
    invalidBody: { body: invalid, property, rule },
  })),
  {
    operationId: 'core.update-kyc-enhanced-due-diligence',
    method: 'PATCH',
    url: '/core/kyc/processes/enhanced-due-diligence',
    scope: 'core.kyc.enhanced-due-diligence:update',
    subjects: ['user:individual'],
    success: 200,
    prepare: async (ctx, token, userId) => {
      await scoreHighRisk(ctx, token, userId)
      kycEvidenceFileId = await uploadedFile(ctx, token, userId, { category: 'document', contentType: 'application/pdf' })
    },
    body: () => ({ input: { media: [{ context: 'source-of-funds-proof', fileId: kycEvidenceFileId ?? '0190a8c1-0000-7000-8000-000000000001' }] } }),
    invalidBody: { body: { input: { media: [] } }, property: 'input.media', rule: 'minItems' },
  },
)

/** Answers customer due diligence so that it scores high: enhanced due diligence then applies. */
async function scoreHighRisk(ctx: TestContext, token: string, userId: string): Promise<void> {
  for (const answers of [
    { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
    { 'financial-information': { 'source-of-funds': 'other', 'annual-income-range': '0-20000-GBP', 'expected-annual-deposits-range': '0-5000-GBP' } },
    { employment: { status: 'employed' } },
  ]) {
    const response = await ctx.request({ method: 'PATCH', url: '/core/kyc/processes/customer-due-diligence', headers: bearer(token, userId), payload: { input: { answers } } })
    assert.equal(response.status, 200, response.body)
  }
}

// Files: get-file acts on the file `prepare` created for the acting user (the URL is read when a request is sent).
let preparedFileId: string | undefined
ROUTES.push(
  {
    operationId: 'core.create-file',
    method: 'POST',
    url: '/core/files',
    scope: 'core.files:create',
    subjects: ['user:business', 'user:individual'],
    success: 201,
    body: () => ({ category: 'image', contentType: 'image/png' }),
    invalidBody: { body: { category: 'audio', contentType: 'audio/mpeg' }, property: 'category', rule: 'enum' },
  },
  {
    operationId: 'core.get-file',
    method: 'GET',
    get url() {
      return `/core/files/${preparedFileId ?? '0190a8c1-0000-7000-8000-000000000000'}`
    },
    scope: 'core.files:read',
    subjects: ['user:business', 'user:individual'],
    success: 200,
    prepare: async (ctx, token, userId) => {
      const response = await ctx.request({ method: 'POST', url: '/core/files', headers: bearer(token, userId), payload: { category: 'document', contentType: 'application/pdf' } })
      assert.equal(response.status, 201, response.body)
      preparedFileId = response.json<{ file: { id: string } }>().file.id
    },
  },
  {
    operationId: 'core.list-files-settings',
    method: 'GET',
    url: '/core/files/settings',
    scope: 'core.files:read',
    subjects: ['client', 'user:business', 'user:individual'],
    success: 200,
  },
)

// Terms of service. The shipped unique-account-number terms apply to individuals only: acting for a business the
// request is authorized and answers 409 not applicable, which is what the matrix expects for that subject.
let acceptingUserType: 'individual' | 'business' | null = null
ROUTES.push(
  ...(['/core/terms-of-service', '/core/terms-of-service/general-gb-fca'] as const).map((url, i) => ({
    operationId: i === 0 ? 'core.list-terms-of-service' : 'core.get-terms-of-service',
    method: 'GET' as const,
    url,
    scope: 'core.terms-of-service:read',
    subjects: ['client', 'user:business', 'user:individual'] as Subject[],
    success: 200,
  })),
  {
    operationId: 'core.accept-terms-of-service',
    method: 'POST',
    url: '/core/terms-of-service/unique-account-number-viban/accept',
    scope: 'core.terms-of-service:accept',
    subjects: ['user:business', 'user:individual'],
    get success() {
      return acceptingUserType === 'business' ? 409 : 201
    },
    headers: { 'x-service-user-ip': USER_IP },
    prepare: async (ctx, _token, userId) => {
      acceptingUserType = await ctx.services.users.findUserType(ctx.client.organizationId, userId)
    },
  },
)

// Capabilities: read for the acting user.
ROUTES.push(
  ...(['/core/capabilities', '/core/capabilities/trades'] as const).map((url, i) => ({
    operationId: i === 0 ? 'core.list-capabilities' : 'core.get-capability',
    method: 'GET' as const,
    url,
    scope: 'core.capabilities:read',
    subjects: ['user:business', 'user:individual'] as Subject[],
    success: 200,
  })),
)

// Accounts: each case acts for a fresh user, so the account it names is prepared for that user.
let preparedAccountId = ''
async function prepareAccount(ctx: TestContext, token: string, userId: string): Promise<void> {
  const response = await ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: 'Prepared', asset: 'BTC' } })
  assert.equal(response.status, 201, response.body)
  preparedAccountId = response.json<{ account: { id: string } }>().account.id
}
const accountRoute = (route: Omit<RouteCase, 'subjects' | 'url'> & { url: string | (() => string) }): RouteCase => {
  const { url, ...rest } = route
  const target = { ...rest, subjects: ['user:business', 'user:individual'] as Subject[], url: '' }
  return Object.defineProperty(target, 'url', { get: typeof url === 'string' ? () => url : url, enumerable: true })
}
/** The portfolio's operations: every user may read holdings and balance history; performance is for individuals. */
const BOTH: Subject[] = ['user:business', 'user:individual']
const INDIVIDUAL: Subject[] = ['user:individual']
const lastMonth = () => {
  const now = new Date()
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1))
  return `period=one-month&year=${month.getUTCFullYear()}&month=${month.getUTCMonth() + 1}`
}
/** Two months of sandbox history: last month can be stated. */
async function prepareHistory(ctx: TestContext, token: string, userId: string): Promise<void> {
  const response = await ctx.request({ method: 'POST', url: '/core/portfolio/test-helpers/history', headers: bearer(token, userId), payload: { months: 2, seed: 1 } })
  assert.equal(response.status, 201, response.body)
}
const portfolioRoute = (route: Omit<RouteCase, 'url'> & { url: string | (() => string) }): RouteCase => {
  const { url, ...rest } = route
  return Object.defineProperty({ ...rest, url: '' }, 'url', { get: typeof url === 'string' ? () => url : url, enumerable: true })
}
const READ_PORTFOLIO = 'core.portfolio:read'
ROUTES.push(
  portfolioRoute({ operationId: 'core.get-portfolio-overview', method: 'GET', url: '/core/portfolio', scope: READ_PORTFOLIO, subjects: BOTH, success: 200 }),
  portfolioRoute({ operationId: 'core.get-portfolio-performance', method: 'GET', url: '/core/portfolio/performance', scope: READ_PORTFOLIO, subjects: INDIVIDUAL, success: 200 }),
  portfolioRoute({ operationId: 'core.get-portfolio-historical-balance', method: 'GET', url: '/core/portfolio/historical-balance', scope: READ_PORTFOLIO, subjects: BOTH, success: 200 }),
  portfolioRoute({ operationId: 'core.get-portfolio-asset-performance', method: 'GET', url: '/core/portfolio/assets/BTC/performance', scope: READ_PORTFOLIO, subjects: INDIVIDUAL, success: 200 }),
  portfolioRoute({
    operationId: 'core.get-portfolio-many-assets-performance',
    method: 'POST',
    url: '/core/portfolio/assets/_mget/performance',
    scope: READ_PORTFOLIO,
    subjects: INDIVIDUAL,
    success: 200,
    body: () => ({ codes: ['BTC', 'ETH'] }),
    invalidBody: { body: { codes: [] }, property: 'codes', rule: 'minItems' },
  }),
  portfolioRoute({ operationId: 'core.get-portfolio-asset-historical-balance', method: 'GET', url: '/core/portfolio/assets/BTC/historical-balance', scope: READ_PORTFOLIO, subjects: BOTH, success: 200 }),
  portfolioRoute({ operationId: 'core.get-portfolio-account-performance', method: 'GET', url: () => `/core/portfolio/accounts/${preparedAccountId}/performance`, scope: READ_PORTFOLIO, subjects: INDIVIDUAL, success: 200, prepare: prepareAccount }),
  portfolioRoute({
    operationId: 'core.get-portfolio-many-accounts-performance',
    method: 'POST',
    url: '/core/portfolio/accounts/_mget/performance',
    scope: READ_PORTFOLIO,
    subjects: INDIVIDUAL,
    success: 200,
    prepare: prepareAccount,
    body: () => ({ ids: [preparedAccountId] }),
    invalidBody: { body: { ids: ['not-a-uuid'] }, property: 'ids[0]', rule: 'format' },
  }),
  portfolioRoute({ operationId: 'core.get-portfolio-account-historical-balance', method: 'GET', url: () => `/core/portfolio/accounts/${preparedAccountId}/historical-balance`, scope: READ_PORTFOLIO, subjects: BOTH, success: 200, prepare: prepareAccount }),
  portfolioRoute({ operationId: 'core.get-portfolio-statement', method: 'GET', url: () => `/core/statements/portfolio?${lastMonth()}`, scope: 'core.statements:read', subjects: BOTH, success: 200, prepare: prepareHistory }),
  portfolioRoute({ operationId: 'core.get-transactions-statement', method: 'GET', url: () => `/core/statements/transactions?${lastMonth()}`, scope: 'core.statements:read', subjects: BOTH, success: 200, prepare: prepareHistory }),
  portfolioRoute({
    operationId: 'core.generate-portfolio-history',
    method: 'POST',
    url: '/core/portfolio/test-helpers/history',
    scope: 'core.accounts:use-test-helpers',
    subjects: BOTH,
    success: 201,
    body: () => ({ months: 1, seed: 1 }),
    invalidBody: { body: { months: 0 }, property: 'months', rule: 'minimum' },
  }),
)

ROUTES.push(
  accountRoute({ operationId: 'core.list-accounts', method: 'GET', url: '/core/accounts', scope: 'core.accounts:read', success: 200 }),
  accountRoute({
    operationId: 'core.create-account',
    method: 'POST',
    url: '/core/accounts',
    scope: 'core.accounts:create',
    success: 201,
    body: () => ({ label: 'My BTC account', asset: 'BTC' }),
    invalidBody: { body: { label: 'x'.repeat(141), asset: 'BTC' }, property: 'label', rule: 'maxLength' },
  }),
  accountRoute({ operationId: 'core.list-default-accounts', method: 'GET', url: '/core/accounts/defaults', scope: 'core.accounts:read', success: 200 }),
  accountRoute({ operationId: 'core.get-account', method: 'GET', url: () => `/core/accounts/${preparedAccountId}`, scope: 'core.accounts:read', success: 200, prepare: prepareAccount }),
  accountRoute({
    operationId: 'core.update-account',
    method: 'PATCH',
    url: () => `/core/accounts/${preparedAccountId}`,
    scope: 'core.accounts:update',
    success: 200,
    prepare: prepareAccount,
    body: () => ({ label: 'Renamed' }),
    invalidBody: { body: { label: 'x', asset: 'ETH' }, property: 'asset', rule: 'additionalProperties' },
  }),
  accountRoute({ operationId: 'core.archive-account', method: 'DELETE', url: () => `/core/accounts/${preparedAccountId}`, scope: 'core.accounts:archive', success: 204, prepare: prepareAccount }),
)

// Deposit methods: of an account prepared for the acting user; reading needs one set up first.
const depositMethodUrl = () => `/core/accounts/${preparedAccountId}/deposit-method?type=crypto&asset=BTC&network=bitcoin`
async function prepareDepositMethod(ctx: TestContext, token: string, userId: string): Promise<void> {
  await prepareAccount(ctx, token, userId)
  const response = await ctx.request({ method: 'PUT', url: depositMethodUrl(), headers: bearer(token, userId) })
  assert.equal(response.status, 201, response.body)
}
ROUTES.push(
  accountRoute({ operationId: 'core.get-account-deposit-method', method: 'GET', url: depositMethodUrl, scope: 'core.accounts:deposit-method', success: 200, prepare: prepareDepositMethod }),
  accountRoute({ operationId: 'core.setup-account-deposit-method', method: 'PUT', url: depositMethodUrl, scope: 'core.accounts:deposit-method', success: 201, prepare: prepareAccount }),
)

// Deposit test helpers: a deposit to a method prepared for the acting user.
let preparedDestination: Record<string, unknown> = {}
async function prepareDestination(ctx: TestContext, token: string, userId: string, asset: string, type: string, network: string): Promise<void> {
  const opened = await ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: 'Prepared', asset } })
  assert.equal(opened.status, 201, opened.body)
  const accountId = opened.json<{ account: { id: string } }>().account.id
  const url = `/core/accounts/${accountId}/deposit-method?type=${type}&asset=${asset}&network=${network}`
  const response = await ctx.request({ method: 'PUT', url, headers: bearer(token, userId) })
  assert.equal(response.status, 201, response.body)
  preparedDestination = response.json<{ depositMethod: { details: Record<string, unknown> } }>().depositMethod.details
}
ROUTES.push(
  accountRoute({
    operationId: 'core.simulate-crypto-deposit',
    method: 'POST',
    url: '/core/accounts/test-helpers/crypto-deposits',
    scope: 'core.accounts:use-test-helpers',
    success: 202,
    prepare: (ctx, token, userId) => prepareDestination(ctx, token, userId, 'BTC', 'crypto', 'bitcoin'),
    body: () => ({ network: 'bitcoin', address: preparedDestination.address, asset: 'BTC', amount: '0.01' }),
    invalidBody: { body: { network: 'bitcoin', address: 42, asset: 'BTC', amount: '1' }, property: 'address', rule: 'type' },
  }),
  accountRoute({
    operationId: 'core.simulate-bank-deposit',
    method: 'POST',
    url: '/core/accounts/test-helpers/bank-deposits',
    scope: 'core.accounts:use-test-helpers',
    success: 202,
    prepare: (ctx, token, userId) => prepareDestination(ctx, token, userId, 'EUR', 'bank', 'sepa'),
    body: () => ({ network: 'sepa', iban: preparedDestination.iban, asset: 'EUR', amount: '10' }),
  }),
)

// Transactions: each case acts for a fresh user, with a deposit recorded to an account of theirs.
let preparedTransactionId = ''
async function prepareTransaction(ctx: TestContext, token: string, userId: string): Promise<void> {
  await prepareAccount(ctx, token, userId)
  const reference = `authorization-${preparedAccountId}`
  const input = { organizationId: ctx.client.organizationId, userId, accountId: preparedAccountId, asset: 'BTC', amount: '0.01', network: 'bitcoin', reference }
  preparedTransactionId = (await ctx.services.deposits.record(ctx.database.db, input)).transactionId
}
ROUTES.push(
  accountRoute({ operationId: 'core.list-transactions', method: 'GET', url: '/core/transactions', scope: 'core.transactions:read', success: 200, prepare: prepareTransaction }),
  accountRoute({ operationId: 'core.get-transaction', method: 'GET', url: () => `/core/transactions/${preparedTransactionId}`, scope: 'core.transactions:read', success: 200, prepare: prepareTransaction }),
  accountRoute({
    operationId: 'core.list-account-transactions',
    method: 'GET',
    url: () => `/core/accounts/${preparedAccountId}/transactions`,
    scope: 'core.transactions:read',
    success: 200,
    prepare: prepareTransaction,
  }),
)

// Quotes and commits: a transfer between two accounts of the acting user (a trade would need their KYC), funded first.
let preparedQuoteBody: Record<string, unknown> = {}
let preparedQuoteId = ''
async function prepareTransfer(ctx: TestContext, token: string, userId: string): Promise<void> {
  await prepareAccount(ctx, token, userId)
  const origin = preparedAccountId
  await prepareAccount(ctx, token, userId)
  const input = { organizationId: ctx.client.organizationId, userId, accountId: origin, asset: 'BTC', amount: '0.01', network: 'bitcoin', reference: `authorization-funds-${origin}` }
  await ctx.services.deposits.record(ctx.database.db, input)
  await ctx.services.worker.drain()
  preparedQuoteBody = { origin: { type: 'account', id: origin }, destination: { type: 'account', id: preparedAccountId }, denomination: { asset: 'BTC', amount: '0.001' } }
}
async function prepareQuote(ctx: TestContext, token: string, userId: string): Promise<void> {
  await prepareTransfer(ctx, token, userId)
  const response = await ctx.request({ method: 'POST', url: '/core/transactions/quote', headers: bearer(token, userId), payload: preparedQuoteBody })
  assert.equal(response.status, 201, response.body)
  preparedQuoteId = response.json<{ quote: { id: string } }>().quote.id
}
for (const [operationId, url] of [['core.create-quote', '/core/transactions/quote'], ['create-quote', '/transactions/quote']] as const) {
  ROUTES.push(
    accountRoute({
      operationId,
      method: 'POST',
      url,
      scope: 'core.transactions:create',
      success: 201,
      prepare: prepareTransfer,
      body: () => preparedQuoteBody,
      invalidBody: { body: { ...preparedQuoteBody, ttl: 'soon' }, property: 'ttl', rule: 'type' },
    }),
  )
}
ROUTES.push(
  accountRoute({
    operationId: 'core.create-transaction',
    method: 'POST',
    url: '/core/transactions',
    scope: 'core.transactions:create',
    success: 201,
    prepare: prepareQuote,
    body: () => ({ quoteId: preparedQuoteId }),
    invalidBody: { body: { quoteId: 42 }, property: 'quoteId', rule: 'type' },
  }),
)

// Payment widget sessions: a select-for-deposit session (no quote needed); the hosted widget reads it with its token.
async function paymentSessionToken(ctx: TestContext, token: string, userId: string): Promise<string> {
  const response = await ctx.request({ method: 'POST', url: '/widgets/payment/sessions', headers: bearer(token, userId), payload: { flow: 'select-for-deposit' } })
  assert.equal(response.status, 201, response.body)
  return response.json<{ session: { token: string } }>().session.token
}
ROUTES.push(
  accountRoute({
    operationId: 'widgets.create-payment-widget-session',
    method: 'POST',
    url: '/widgets/payment/sessions',
    scope: 'widgets.payment.sessions:create',
    success: 201,
    body: () => ({ flow: 'select-for-withdrawal', data: {} }),
    invalidBody: { body: { flow: 'select-for-deposit', data: { domain: 42 } }, property: 'data.domain', rule: 'type' },
  }),
  accountRoute({ operationId: 'widgets.get-current-payment-widget-session', method: 'GET', url: '/widgets/payment/sessions/current', success: 200, sessionToken: paymentSessionToken }),
)

// KYC widget sessions: for individuals; the hosted KYC widget reads its session with its token. The current session's
// scope is core.kyc:read, which this matrix grants its narrow clients (test/kyc-widget-sessions.test.ts checks it).
async function kycSessionToken(ctx: TestContext, token: string, userId: string): Promise<string> {
  const response = await ctx.request({ method: 'POST', url: '/widgets/kyc/sessions', headers: bearer(token, userId), payload: { flow: 'verify' } })
  assert.equal(response.status, 201, response.body)
  return response.json<{ session: { token: string } }>().session.token
}
ROUTES.push(
  {
    operationId: 'widgets.create-kyc-widget-session',
    method: 'POST',
    url: '/widgets/kyc/sessions',
    scope: 'widgets.kyc.sessions:create',
    subjects: ['user:individual'],
    success: 201,
    body: () => ({ flow: 'verify', processes: ['profile'] }),
    invalidBody: { body: { flow: 'verify', processes: 'identity' }, property: 'processes', rule: 'type' },
  },
  { operationId: 'widgets.get-current-kyc-widget-session', method: 'GET', url: '/widgets/kyc/sessions/current', subjects: ['user:individual'], success: 200, sessionToken: kycSessionToken },
)

// External accounts: a SEPA account (no capability needed to link one), prepared for the acting user.
let preparedExternalAccountId = ''
const sepaAccount = { type: 'bank', asset: 'EUR', network: 'sepa', label: 'Prepared', iban: 'DE67370400440532010001', bic: 'COBADEFFXXX' }
async function prepareExternalAccount(ctx: TestContext, token: string, userId: string): Promise<void> {
  const response = await ctx.request({ method: 'POST', url: '/core/external-accounts', headers: bearer(token, userId), payload: sepaAccount })
  assert.equal(response.status, 201, response.body)
  preparedExternalAccountId = response.json<{ externalAccount: { id: string } }>().externalAccount.id
}
const externalAccountUrl = () => `/core/external-accounts/${preparedExternalAccountId}`
ROUTES.push(
  accountRoute({
    operationId: 'core.create-external-account',
    method: 'POST',
    url: '/core/external-accounts',
    scope: 'core.external-accounts:create',
    success: 201,
    body: () => sepaAccount,
    invalidBody: { body: { ...sepaAccount, bic: 42 }, property: 'bic', rule: 'type' },
  }),
  accountRoute({ operationId: 'core.list-external-accounts', method: 'GET', url: '/core/external-accounts', scope: 'core.external-accounts:read', success: 200 }),
  accountRoute({ operationId: 'core.get-external-account', method: 'GET', url: externalAccountUrl, scope: 'core.external-accounts:read', success: 200, prepare: prepareExternalAccount }),
  accountRoute({
    operationId: 'core.update-external-account',
    method: 'PATCH',
    url: externalAccountUrl,
    scope: 'core.external-accounts:update',
    success: 200,
    prepare: prepareExternalAccount,
    body: () => ({ label: 'Renamed' }),
    invalidBody: { body: { label: 'x', iban: 'DE67370400440532010001' }, property: 'iban', rule: 'additionalProperties' },
  }),
  accountRoute({ operationId: 'core.delete-external-account', method: 'DELETE', url: externalAccountUrl, scope: 'core.external-accounts:delete', success: 204, prepare: prepareExternalAccount }),
)

// Verifications of external accounts: a crypto address (bitcoin testnet) of the acting user, with its declared
// level started when the route answers it.
let preparedCryptoAccountId = ''
async function prepareCryptoAccount(ctx: TestContext, token: string, userId: string): Promise<void> {
  const payload = { type: 'crypto', asset: 'BTC', network: 'bitcoin', label: 'Prepared', address: 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv' }
  const response = await ctx.request({ method: 'POST', url: '/core/external-accounts', headers: bearer(token, userId), payload })
  assert.equal(response.status, 201, response.body)
  preparedCryptoAccountId = response.json<{ externalAccount: { id: string } }>().externalAccount.id
}
async function prepareDeclaredVerification(ctx: TestContext, token: string, userId: string): Promise<void> {
  await prepareCryptoAccount(ctx, token, userId)
  const response = await ctx.request({ method: 'POST', url: `/core/external-accounts/${preparedCryptoAccountId}/verifications`, headers: bearer(token, userId), payload: { level: 'declared' } })
  assert.equal(response.status, 201, response.body)
}
const verificationsUrl = () => `/core/external-accounts/${preparedCryptoAccountId}/verifications`
ROUTES.push(
  accountRoute({
    operationId: 'core.list-external-account-verifications',
    method: 'GET',
    url: verificationsUrl,
    scope: 'core.external-accounts:read',
    success: 200,
    prepare: prepareCryptoAccount,
  }),
  accountRoute({
    operationId: 'core.start-external-account-verification',
    method: 'POST',
    url: verificationsUrl,
    scope: 'core.external-accounts:update',
    success: 201,
    prepare: prepareCryptoAccount,
    body: () => ({ level: 'declared' }),
    invalidBody: { body: { level: 'complete' }, property: 'level', rule: 'enum' },
  }),
  accountRoute({
    operationId: 'core.answer-external-account-verification',
    method: 'PUT',
    url: () => `${verificationsUrl()}/declared`,
    scope: 'core.external-accounts:update',
    success: 200,
    prepare: prepareDeclaredVerification,
    body: () => ({ proof: { isVASP: false, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true } }),
    invalidBody: { body: { proof: true }, property: 'proof', rule: 'type' },
  }),
)

// Requests for information: a crypto deposit of the acting user above the travel rule's threshold, held for one.
let preparedHeldDepositId = ''
let preparedRequestId = ''
async function prepareHeldDeposit(ctx: TestContext, token: string, userId: string): Promise<void> {
  const account = await ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: 'Held', asset: 'BTC' } })
  assert.equal(account.status, 201, account.body)
  const { transactionId } = await ctx.services.deposits.record(ctx.database.db, {
    organizationId: ctx.client.organizationId,
    userId,
    accountId: account.json<{ account: { id: string } }>().account.id,
    asset: 'BTC',
    amount: '0.5',
    network: 'bitcoin',
    source: { type: 'crypto-address', network: 'bitcoin', address: 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv' },
    reference: `held-${Math.random().toString(36).slice(2)}`,
  })
  await ctx.services.worker.drain()
  const principal = { organizationId: ctx.client.organizationId, clientId: 'test', scopes: new Set<string>(), subject: 'user:individual' as const, userId }
  const [request] = await ctx.services.requestsForInformation.list(principal, transactionId)
  assert.ok(request, 'the deposit was not held for information')
  preparedHeldDepositId = transactionId
  preparedRequestId = request.id
}
const requestsUrl = () => `/core/transactions/${preparedHeldDepositId}/requests-for-information`
ROUTES.push(
  accountRoute({ operationId: 'core.list-transaction-requests-for-information', method: 'GET', url: requestsUrl, scope: 'core.transactions.requests-for-information:read', success: 200, prepare: prepareHeldDeposit }),
  accountRoute({ operationId: 'core.get-transaction-request-for-information', method: 'GET', url: () => `${requestsUrl()}/${preparedRequestId}`, scope: 'core.transactions.requests-for-information:read', success: 200, prepare: prepareHeldDeposit }),
  accountRoute({
    operationId: 'core.update-transaction-request-for-information',
    method: 'PUT',
    url: () => `${requestsUrl()}/${preparedRequestId}`,
    scope: 'core.transactions.requests-for-information:update',
    success: 200,
    prepare: prepareHeldDeposit,
    body: () => ({ data: { ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: 'Doe' }] } } }] } } } }),
    invalidBody: { body: { data: 'nobody' }, property: 'data', rule: 'type' },
  }),
)

// Travel-rule widget sessions: a deposit form for the held deposit prepared above; the hosted widget reads its session
// and answers its request with the session's token (test/travel-rule-widget-sessions.test.ts checks the rest).
async function travelRuleSessionToken(ctx: TestContext, token: string, userId: string): Promise<string> {
  const payload = { flow: 'deposit-form', data: { requestForInformationId: preparedRequestId } }
  const response = await ctx.request({ method: 'POST', url: '/widgets/travel-rule/sessions', headers: bearer(token, userId), payload })
  assert.equal(response.status, 201, response.body)
  return response.json<{ session: { token: string } }>().session.token
}
const namedOriginator = { ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: 'Doe' }] } } }] } } }
ROUTES.push(
  accountRoute({
    operationId: 'widgets.create-travel-rule-widget-session',
    method: 'POST',
    url: '/widgets/travel-rule/sessions',
    scope: 'widgets.travel-rule.sessions:create',
    success: 201,
    prepare: prepareHeldDeposit,
    body: () => ({ flow: 'deposit-form', data: { requestForInformationId: preparedRequestId } }),
    invalidBody: { body: { flow: 'deposit-form', data: { requestForInformationId: 42 } }, property: 'data.requestForInformationId', rule: 'type' },
  }),
  accountRoute({ operationId: 'widgets.get-current-travel-rule-widget-session', method: 'GET', url: '/widgets/travel-rule/sessions/current', success: 200, prepare: prepareHeldDeposit, sessionToken: travelRuleSessionToken }),
  accountRoute({
    operationId: 'widgets.answer-travel-rule-widget-session',
    method: 'PUT',
    url: '/widgets/travel-rule/sessions/current/request-for-information',
    scope: 'core.transactions.requests-for-information:update',
    success: 200,
    prepare: prepareHeldDeposit,
    sessionToken: travelRuleSessionToken,
    body: () => ({ data: namedOriginator }),
    invalidBody: { body: { data: 'nobody' }, property: 'data', rule: 'type' },
  }),
)

async function putMetadata(ctx: TestContext, token: string, userId: string): Promise<void> {
  const response = await ctx.request({ method: 'PUT', url: '/core/users/me/metadata', headers: bearer(token, userId), payload: { externalId: 'crm-1' } })
  assert.ok(response.status === 201 || response.status === 200, response.body)
}

const businessUser = () => ({
  type: 'business',
  email: `biz-${Math.random().toString(36).slice(2)}@example.com`,
  country: 'GB',
  legalEntityType: 'private-limited-company',
  termsOfService: 'general-gb-fca',
})

function assertError(response: TestResponse, status: number, code: string) {
  assert.equal(response.status, status, response.body)
  assert.equal(response.json().code, code, response.body)
}

for (const engine of ENGINES) {
  describe(`authorization [${engine}]`, () => {
    let ctx: TestContext
    let token: string
    let individualId: string
    let businessId: string

    before(async () => {
      ctx = await startApp(engine)
      token = await ctx.token()
      individualId = (await ctx.createUser(token)).id
      businessId = (await ctx.createUser(token, businessUser())).id
    })
    after(() => ctx.close())

    // The webhook portal's operations take the portal session instead (test/webhooks/portal.test.ts).
    test('every operation secured by an access token is covered by this matrix', () => {
      const document = ctx.app.swagger() as { paths: Record<string, Record<string, { operationId?: string; security?: Record<string, unknown>[] }>> }
      const secured = Object.values(document.paths)
        .flatMap((operations) => Object.values(operations))
        .filter((operation) => Array.isArray(operation.security) && operation.security.some((scheme) => 'OAuth2' in scheme))
        .map((operation) => operation.operationId)
      assert.deepEqual(secured.sort(), ROUTES.map((r) => r.operationId).sort())
    })

    /** A fresh user of the right kind for a route that acts on behalf of a user (routes may delete it). */
    async function actingUser(subject: Subject): Promise<string> {
      return (await ctx.createUser(token, subject === 'user:business' ? businessUser() : individualUser())).id
    }

    function send(route: RouteCase, headers: Record<string, string>, body: unknown = route.body?.()) {
      const payload = body === undefined ? {} : { payload: route.headers?.['content-type'] ? JSON.stringify(body) : (body as Record<string, unknown>) }
      return ctx.request({ method: route.method, url: route.url, headers: { ...route.headers, ...headers }, ...payload })
    }

    for (const route of ROUTES) {
      describe(`${route.method} ${route.url}`, () => {
        const userSubject = route.subjects.find((s) => s !== 'client')

        test('succeeds for every allowed subject', async () => {
          for (const subject of route.subjects) {
            const userId = subject === 'client' ? undefined : await actingUser(subject)
            if (userId) await route.prepare?.(ctx, token, userId)
            const response = route.sessionToken && userId
              ? await send(route, bearer(await route.sessionToken(ctx, token, userId)))
              : await send(route, bearer(token, userId))
            assert.equal(response.status, route.success, `${subject}: ${response.body}`)
          }
        })

        test('a missing or malformed token is 401 token_invalid', async () => {
          assertError(await send(route, {}), 401, 'token_invalid')
          assertError(await send(route, { authorization: 'Bearer not.a.jwt' }), 401, 'token_invalid')
          assertError(await send(route, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }), 401, 'token_invalid')
          const tampered = token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA')
          assertError(await send(route, { authorization: `Bearer ${tampered}` }), 401, 'token_invalid')
        })

        test('a token signed by another key or for another issuer is 401 token_invalid', async () => {
          const foreignKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
          const claims = { clientId: ctx.client.clientId, organizationId: ctx.client.organizationId, scopes: [route.scope ?? 'core.kyc:read', 'core.users:act-on-behalf-of'], ttlSeconds: 600 }
          const foreign = await new TokenSigner(foreignKey, PUBLIC_URL, PUBLIC_URL).sign(claims)
          assertError(await send(route, { authorization: `Bearer ${foreign}` }), 401, 'token_invalid')
          const otherIssuer = await new TokenSigner(ctx.secrets.tokenSigningKey, 'https://elsewhere.example', PUBLIC_URL).sign(claims)
          assertError(await send(route, { authorization: `Bearer ${otherIssuer}` }), 401, 'token_invalid')
        })

        test('an expired token is 401 token_expired', async () => {
          const signer = new TokenSigner(ctx.secrets.tokenSigningKey, PUBLIC_URL, PUBLIC_URL)
          const expired = await signer.sign({ clientId: ctx.client.clientId, organizationId: ctx.client.organizationId, scopes: [route.scope ?? 'core.kyc:read'], ttlSeconds: -120 })
          assertError(await send(route, { authorization: `Bearer ${expired}` }), 401, 'token_expired')
        })

        test('a token of a revoked client is 401 token_revoked', async () => {
          const client = await ctx.newClient()
          const revokedToken = await ctx.token(client)
          await ctx.services.clients.revoke(client.clientId)
          assertError(await send(route, bearer(revokedToken)), 401, 'token_revoked')
        })

        if (route.scope) test('a token without the scope is 403 token_insufficient_scopes', async () => {
          const narrow = await ctx.newClient('core.users:act-on-behalf-of core.kyc:read', ctx.client.organizationId)
          const userId = userSubject ? await actingUser(userSubject) : undefined
          const response = await send(route, bearer(await ctx.token(narrow), userId))
          assertError(response, 403, 'token_insufficient_scopes')
          const [security] = response.json<{ details: { security: { scheme: string; schemeScopes: string[]; tokenScopes: string[] }[] } }>().details.security
          assert.ok(security!.schemeScopes.includes(route.scope!))
          assert.deepEqual(security!.tokenScopes.sort(), ['core.kyc:read', 'core.users:act-on-behalf-of'])
        })

        if (route.subjects.length < 3) test('a subject the route does not allow is 403 subject_not_allowed', async () => {
          if (!route.subjects.includes('client')) {
            assertError(await send(route, bearer(token)), 403, 'subject_not_allowed')
          }
          for (const subject of ['user:individual', 'user:business'] as const) {
            if (route.subjects.includes(subject)) continue
            const response = await send(route, bearer(token, subject === 'user:individual' ? individualId : businessId))
            // Named as it is, on an operation for clients only too.
            assertError(response, 403, 'subject_not_allowed')
            assert.equal(response.json<{ details: { subject: string } }>().details.subject, subject)
          }
        })

        if (userSubject) {
          test('acting for a user needs core.users:act-on-behalf-of', async () => {
            const noActing = await ctx.newClient(route.scope ?? 'core.kyc:read', ctx.client.organizationId)
            const response = await send(route, bearer(await ctx.token(noActing), await actingUser(userSubject)))
            assertError(response, 403, 'token_insufficient_scopes')
            assert.ok(JSON.stringify(response.json().details).includes('core.users:act-on-behalf-of'))
          })

          test("another organization's user is 404 entity_not_found", async () => {
            const otherToken = await ctx.token(await ctx.newClient())
            const foreignUser = (await ctx.createUser(otherToken, userSubject === 'user:business' ? businessUser() : individualUser())).id
            const response = await send(route, bearer(token, foreignUser))
            assertError(response, 404, 'entity_not_found')
            assert.equal(response.json<{ details: { entity: string } }>().details.entity, 'user')
          })

          test('an unknown or deleted user is 404 entity_not_found', async () => {
            assertError(await send(route, bearer(token, '0190a8c1-0000-7000-8000-000000000000')), 404, 'entity_not_found')
            const deleted = await actingUser(userSubject)
            const removal = await ctx.request({ method: 'DELETE', url: '/core/users/me', headers: bearer(token, deleted), payload: { review: { reason: 'other' } } })
            assert.equal(removal.status, 204)
            assertError(await send(route, bearer(token, deleted)), 404, 'entity_not_found')
          })

          test('a malformed X-On-Behalf-Of is 400 request_invalid', async () => {
            for (const value of ['user', 'user not-a-uuid', `account ${individualId}`, `user  ${individualId}`]) {
              const response = await send(route, { authorization: `Bearer ${token}`, 'x-on-behalf-of': value })
              assertError(response, 400, 'request_invalid')
              assert.equal(response.json<{ details: { context: string } }>().details.context, 'headers')
            }
          })
        }

        if (route.invalidBody) {
          const invalid = route.invalidBody
          test('a malformed body is 400 request_invalid with violations', async () => {
            const userId = userSubject ? await actingUser(userSubject) : undefined
            const response = await send(route, bearer(token, userId), invalid.body)
            assertError(response, 400, 'request_invalid')
            const details = response.json<{ details: { context: string; violations: { property: string; rule: string }[] } }>().details
            assert.equal(details.context, 'body')
            assert.ok(
              details.violations.some((v) => v.property === invalid.property && v.rule === invalid.rule),
              JSON.stringify(details.violations),
            )
          })
        }
      })
    }
  })

  describe(`per-client rate limit [${engine}]`, () => {
    let ctx: TestContext
    before(async () => {
      ctx = await startApp(engine, { RATE_LIMIT_PER_MINUTE: '3' })
    })
    after(() => ctx.close())

    test('requests beyond the limit get 429 with Retry-After; other clients are not affected', async () => {
      const token = await ctx.token()
      const userId = (await ctx.createUser(token)).id
      for (let i = 0; i < 2; i++) assert.equal((await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, userId) })).status, 200)
      const limited = await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, userId) })
      assertError(limited, 429, 'too_many_requests')
      assert.ok(Number(limited.headers['retry-after']) > 0)

      const otherToken = await ctx.token(await ctx.newClient())
      const otherUser = (await ctx.createUser(otherToken)).id
      assert.equal((await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(otherToken, otherUser) })).status, 200)
    })
  })
}
