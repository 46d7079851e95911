/** Fixtures for tests that move money through the API: verified users, funded accounts, quotes and commits. */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import BigNumber from 'bignumber.js'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Principal } from '../src/http/principal.ts'
import { bearer, individualUser, type TestContext, type TestResponse } from './helpers.ts'

export interface Endpoint {
  asset: string
  amount: string
  rate: string
  node: Record<string, unknown>
}

export interface Fee {
  type: string
  code: string
  asset: string
  amount: string
  percentage?: string
}

export interface Quote {
  id: string
  origin: Endpoint
  destination: Endpoint
  denomination: { asset: string; amount: string; rate: string; target: string }
  fees: Fee[]
  requirements: string[]
  expiresAt: string
}

export interface Transaction {
  id: string
  type: string
  status: string
  statusDetails?: { reason?: string }
  origin: Endpoint
  destination: Endpoint
  denomination: { asset: string; amount: string; rate: string; target: string }
  fees: Fee[]
  quotedAt: string
  createdAt: string
  updatedAt: string
  completedAt?: string
}

const electronicIdentity = {
  type: 'electronic-verification',
  input: { data: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', citizenshipCountry: 'FR' } },
}
const electronicProofOfAddress = {
  type: 'electronic-verification',
  input: { data: { givenName: 'John', familyName: 'Doe', address: { country: 'FR', city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } },
}
const dueDiligenceAnswers = [
  { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
  { 'financial-information': { 'source-of-funds': 'salary', 'annual-income-range': '40000-60000-GBP', 'expected-annual-deposits-range': '0-5000-GBP' } },
  { employment: { status: 'employed' } },
]

/** A user living in France (no financial-promotion steps) whose KYC lets them trade, withdraw and link cards. */
export async function verifiedUser(ctx: TestContext, token: string): Promise<string> {
  const userId = (await ctx.createUser(token, individualUser({ address: { country: 'FR' }, primaryCitizenship: 'FR', termsOfService: 'general-lt-fcs' }))).id
  const kyc = async (process: string, payload: Record<string, unknown>) => {
    const response = await ctx.request({ method: 'PATCH', url: `/core/kyc/processes/${process}`, headers: bearer(token, userId), payload })
    assert.equal(response.status, 200, response.body)
  }
  await kyc('address', { input: { address: { city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } })
  await kyc('identity', electronicIdentity)
  await kyc('proof-of-address', electronicProofOfAddress)
  for (const answers of dueDiligenceAnswers) await kyc('customer-due-diligence', { input: { answers } })
  return userId
}

export async function openAccount(ctx: TestContext, token: string, userId: string, asset: string): Promise<string> {
  const response = await ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: `My ${asset}`, asset } })
  assert.equal(response.status, 201, response.body)
  return response.json<{ account: { id: string } }>().account.id
}

const NETWORK: Record<string, string> = { BTC: 'bitcoin', ETH: 'ethereum', EUR: 'sepa', GBP: 'fps', USD: 'ach' }

/**
 * Environment for a suite whose deposits and withdrawals are not about the travel rule: the shipped
 * transaction-rules.json with thresholds no test amount reaches, as an operator's reference data directory.
 */
export function withoutTravelRule(): Record<string, string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-rules-'))
  const rules = JSON.parse(readFileSync(new URL('../reference-data/transaction-rules.json', import.meta.url), 'utf8')) as Record<string, unknown>
  rules.travelRule = { default: { thresholdUsd: '1000000000000' }, assets: {}, selfDeclarationMaximumUsd: '1000' }
  writeFileSync(path.join(dir, 'transaction-rules.json'), JSON.stringify(rules))
  return { REFERENCE_DATA_DIR: dir }
}

/** The originator a test deposit's request for information is answered with: someone else, named. */
export const FUNDING_ORIGINATOR = { ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: 'Source', secondaryIdentifier: 'Funding', nameIdentifierType: 'LEGL' }] } } }] } } }

/**
 * Credits an account as a rail deposit would, and settles it. A crypto deposit at or above the travel rule's
 * threshold is held for information: its request is answered as the user would (the originator named), so that
 * it settles.
 */
export async function fund(ctx: TestContext, userId: string, accountId: string, asset: string, amount: string): Promise<void> {
  const organizationId = (await ctx.database.db.selectFrom('accounts').select('organization_id').where('id', '=', accountId).executeTakeFirstOrThrow()).organization_id
  const { transactionId } = await ctx.services.deposits.record(ctx.database.db, {
    organizationId,
    userId,
    accountId,
    asset,
    amount,
    network: NETWORK[asset] ?? 'bitcoin',
    reference: `fund-${randomBytes(8).toString('hex')}`,
  })
  await ctx.services.worker.drain()
  const principal: Principal = { organizationId, clientId: 'test', scopes: new Set(), subject: 'user:individual', userId }
  for (const request of await ctx.services.requestsForInformation.list(principal, transactionId)) {
    if (request.status === 'pending') await ctx.services.requestsForInformation.answer(principal, transactionId, request.id, FUNDING_ORIGINATOR)
  }
  await ctx.services.worker.drain()
}

export function requestQuote(ctx: TestContext, token: string, userId: string, body: Record<string, unknown>): Promise<TestResponse> {
  return ctx.request({ method: 'POST', url: '/core/transactions/quote', headers: bearer(token, userId), payload: body })
}

export function quoteBody(originId: string, destinationId: string, asset: string, amount: string, target: 'origin' | 'destination' = 'origin'): Record<string, unknown> {
  return { origin: { type: 'account', id: originId }, destination: { type: 'account', id: destinationId }, denomination: { asset, amount, target } }
}

export async function quoted(ctx: TestContext, token: string, userId: string, body: Record<string, unknown>): Promise<Quote> {
  const response = await requestQuote(ctx, token, userId, body)
  assert.equal(response.status, 201, response.body)
  return response.json<{ quote: Quote }>().quote
}

export function commit(ctx: TestContext, token: string, userId: string, quoteId: string, options: { key?: string; body?: Record<string, unknown> } = {}): Promise<TestResponse> {
  return ctx.request({
    method: 'POST',
    url: '/core/transactions',
    headers: { ...bearer(token, userId), ...(options.key !== undefined ? { 'idempotency-key': options.key } : {}) },
    payload: { quoteId, ...options.body },
  })
}

export async function balanceOf(ctx: TestContext, token: string, userId: string, accountId: string): Promise<{ total: string; available: string }> {
  const response = await ctx.request({ method: 'GET', url: `/core/accounts/${accountId}`, headers: bearer(token, userId) })
  assert.equal(response.status, 200, response.body)
  return response.json<{ account: { balance: { total: string; available: string } } }>().account.balance
}

export async function transactionOf(ctx: TestContext, token: string, userId: string, id: string): Promise<Transaction> {
  const response = await ctx.request({ method: 'GET', url: `/core/transactions/${id}`, headers: bearer(token, userId) })
  assert.equal(response.status, 200, response.body)
  return response.json<{ transaction: Transaction }>().transaction
}

export function assertError(response: TestResponse, status: number, code: string): Record<string, unknown> | undefined {
  assert.equal(response.status, status, response.body)
  const body = response.json<{ code: string; details?: Record<string, unknown> }>()
  assert.equal(body.code, code, response.body)
  return body.details
}

/** A request for information, as the API shows it (docs/travel-rule.md). */
export interface RequestForInformation {
  id: string
  transactionId?: string
  type: string
  status: string
  data?: Record<string, unknown>
  context: { direction: string; party: string; network: string; asset: string; amount: string; addresses: string[] }
  statusDetails?: { reason: string }
  expiresAt: string
}

/** A crypto deposit from `sender`, as the chain rail reports it, run by the worker as far as it goes; its id. */
export async function chainDeposit(ctx: TestContext, input: { userId: string; accountId: string; amount: string; sender: string }): Promise<string> {
  const { transactionId } = await ctx.services.deposits.record(ctx.database.db, {
    organizationId: ctx.client.organizationId,
    userId: input.userId,
    accountId: input.accountId,
    asset: 'BTC',
    amount: input.amount,
    network: 'bitcoin',
    source: { type: 'crypto-address', network: 'bitcoin', address: input.sender },
    reference: `chain-${randomBytes(8).toString('hex')}`,
  })
  await ctx.services.worker.drain()
  return transactionId
}

/**
 * The average-cost method, written out plainly (docs/portfolio.md): what the portfolio tests expect of one
 * position, computed from the transactions' own figures, independently of src/.
 */
export class AverageCost {
  quantity = new BigNumber(0)
  cost = new BigNumber(0)
  /** An acquisition: `quantity` that cost `paid` (US dollars). */
  buy(quantity: string, paid: BigNumber.Value): void {
    this.quantity = this.quantity.plus(quantity)
    this.cost = this.cost.plus(paid)
  }
  /** A disposal at the average cost; returns the cost that left with it. */
  dispose(quantity: string): BigNumber {
    const q = new BigNumber(quantity)
    const removed = q.isGreaterThanOrEqualTo(this.quantity) ? this.cost : this.cost.times(q).div(this.quantity)
    this.cost = this.cost.minus(removed)
    this.quantity = this.quantity.minus(q)
    return removed
  }
  get average(): BigNumber {
    return this.cost.div(this.quantity)
  }
}
