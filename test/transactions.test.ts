import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { openDatabase } from '../src/db/database.ts'
import { JobHandlers } from '../src/jobs/queue.ts'
import { Worker } from '../src/jobs/worker.ts'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { LedgerService } from '../src/modules/ledger/ledger.service.ts'
import { defineDepositFlow } from '../src/flows/deposit.flow.ts'
import { FlowRunner } from '../src/flows/runner.ts'
import { TransactionsService } from '../src/modules/transactions/transactions.service.ts'
import { withoutTravelRule } from './money.ts'
import { bearer, ENGINES, TEST_DATABASE_URL, useApp, type TestResponse } from './helpers.ts'

const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'

interface Transaction {
  id: string
  type: string
  status: string
  statusDetails?: { reason?: string }
  origin: { asset: string; amount: string; rate: string; node: Record<string, unknown> }
  destination: { asset: string; amount: string; rate: string; node: Record<string, unknown> }
  denomination: Record<string, unknown>
  fees: unknown[]
  createdAt: string
  updatedAt: string
  completedAt?: string
}

function assertError(response: TestResponse, status: number, code: string): Record<string, unknown> | undefined {
  assert.equal(response.status, status, response.body)
  const body = response.json<{ code: string; details?: Record<string, unknown> }>()
  assert.equal(body.code, code, response.body)
  return body.details
}

let sequence = 0
const nextReference = () => `rail-payment-${process.pid}-${++sequence}`

for (const engine of ENGINES) {
  describe(`transactions and deposits [${engine}]`, () => {
    // Deposits here are about settlement, not the travel rule (test/travel-rule.test.ts).
    const suite = useApp(engine, withoutTravelRule())
    const org = () => suite.ctx.client.organizationId

    async function openAccount(token = suite.token, asset = 'BTC'): Promise<{ userId: string; accountId: string }> {
      const userId = (await suite.ctx.createUser(token)).id
      const response = await suite.ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: 'Main', asset } })
      assert.equal(response.status, 201, response.body)
      return { userId, accountId: response.json<{ account: { id: string } }>().account.id }
    }
    const record = (input: { userId: string; accountId: string; amount?: string; asset?: string; network?: string; reference?: string; organizationId?: string }) =>
      suite.ctx.services.deposits.record(suite.ctx.database.db, {
        organizationId: input.organizationId ?? org(),
        userId: input.userId,
        accountId: input.accountId,
        asset: input.asset ?? 'BTC',
        amount: input.amount ?? '0.5',
        network: input.network ?? 'bitcoin',
        reference: input.reference ?? nextReference(),
      })
    const get = (userId: string, id: string, token = suite.token) => suite.ctx.request({ method: 'GET', url: `/core/transactions/${id}`, headers: bearer(token, userId) })
    const list = (userId: string, query = '', token = suite.token) => suite.ctx.request({ method: 'GET', url: `/core/transactions${query}`, headers: bearer(token, userId) })
    const listOfAccount = (userId: string, accountId: string, query = '', token = suite.token) =>
      suite.ctx.request({ method: 'GET', url: `/core/accounts/${accountId}/transactions${query}`, headers: bearer(token, userId) })
    const balance = async (userId: string, accountId: string) =>
      (await suite.ctx.request({ method: 'GET', url: `/core/accounts/${accountId}`, headers: bearer(suite.token, userId) })).json<{ account: { balance: { total: string } } }>().account.balance.total
    const postingsOf = async (transactionId: string) =>
      (await suite.ctx.database.db.selectFrom('ledger_transactions').select('id').where('organization_id', '=', org()).where('reference', '=', transactionId).execute()).length

    test('a recorded deposit is processing, then the worker settles it once into the account', async () => {
      const { userId, accountId } = await openAccount()
      const { transactionId } = await record({ userId, accountId, amount: '0.50' })
      const pending = (await get(userId, transactionId)).json<{ transaction: Transaction }>().transaction
      assert.equal(pending.status, 'processing')
      assert.equal(pending.type, 'deposit')
      assert.deepEqual(pending.origin, { asset: 'BTC', amount: '0.5', rate: '1', node: { type: 'crypto-address', network: 'bitcoin' } })
      assert.deepEqual(pending.destination, { asset: 'BTC', amount: '0.5', rate: '1', node: { type: 'account', id: accountId, ownerId: userId } })
      assert.deepEqual(pending.fees, [])
      assert.equal(pending.completedAt, undefined)
      assert.equal(await balance(userId, accountId), '0')

      assert.ok((await suite.ctx.services.worker.drain()) >= 1)
      const settled = (await get(userId, transactionId)).json<{ transaction: Transaction }>().transaction
      assert.equal(settled.status, 'completed')
      assert.ok(settled.completedAt)
      assert.equal(await balance(userId, accountId), '0.5')
      assert.equal(await postingsOf(transactionId), 1)
      const events = await eventsAbout(suite.ctx.database.db, org(), { type: 'transaction', id: transactionId })
      assert.deepEqual(events.map((e) => e.type), ['core.transaction.created', 'core.transaction.status-changed'])
      assert.equal((events[1]!.data as { transaction: Transaction }).transaction.status, 'completed')
      assert.deepEqual((await suite.ctx.services.ledger.check()), [])
    })

    test('settling again (a retried or duplicated job) changes nothing', async () => {
      const { userId, accountId } = await openAccount()
      const { transactionId } = await record({ userId, accountId, amount: '1' })
      const [job] = await suite.ctx.database.db.selectFrom('jobs').selectAll().where('payload', '@>', JSON.stringify({ flowId: transactionId }) as never).execute()
      assert.ok(job)
      const run = () => suite.ctx.services.jobs.run([job], new AbortController().signal)
      await Promise.all([run(), run()])
      await run()
      await suite.ctx.services.worker.drain()
      assert.equal(await postingsOf(transactionId), 1)
      assert.equal(await balance(userId, accountId), '1')
      const events = await eventsAbout(suite.ctx.database.db, org(), { type: 'transaction', id: transactionId })
      assert.equal(events.filter((e) => e.type === 'core.transaction.status-changed').length, 1)
    })

    test('recording the same reference again returns the first deposit; reused for another deposit it is refused', async () => {
      const { userId, accountId } = await openAccount()
      const reference = nextReference()
      const first = await record({ userId, accountId, reference, amount: '0.25' })
      assert.deepEqual(await record({ userId, accountId, reference, amount: '0.250' }), first)
      await assert.rejects(record({ userId, accountId, reference, amount: '0.3' }), { code: 'transaction_reference_reused' })
      assert.equal((await suite.ctx.database.db.selectFrom('transactions').select('id').where('reference', '=', reference).execute()).length, 1)
      assert.equal((await suite.ctx.database.db.selectFrom('jobs').select('id').where('payload', '@>', JSON.stringify({ flowId: first.transactionId }) as never).execute()).length, 1)
    })

    test('bad deposits are refused and record nothing', async () => {
      const { userId, accountId } = await openAccount()
      const other = await openAccount()
      const foreignToken = await suite.ctx.token(await suite.ctx.newClient())
      const foreign = await openAccount(foreignToken)
      const before = await suite.ctx.database.db.selectFrom('transactions').select('id').execute()
      await assert.rejects(record({ userId, accountId: UNKNOWN_ID }), { code: 'entity_not_found' })
      await assert.rejects(record({ userId, accountId: 'not-a-uuid' }), { code: 'entity_not_found' })
      await assert.rejects(record({ userId, accountId: other.accountId }), { code: 'entity_not_found' })
      await assert.rejects(record({ userId: foreign.userId, accountId: foreign.accountId }), { code: 'entity_not_found' })
      await assert.rejects(record({ userId, accountId, asset: 'ETH', network: 'ethereum' }), { code: 'asset_not_supported' })
      await assert.rejects(record({ userId, accountId, asset: 'NOPE' }), { code: 'entity_not_found' })
      await assert.rejects(record({ userId, accountId, network: 'nowhere' }), { code: 'entity_not_found' })
      for (const amount of ['0', '-1', 'abc', '1e3', '0.000000001', '']) {
        await assert.rejects(record({ userId, accountId, amount }), { code: 'transaction_amount_invalid' }, amount)
      }
      await assert.rejects(record({ userId, accountId, reference: '' }), { code: 'request_invalid' })
      assert.equal((await suite.ctx.database.db.selectFrom('transactions').select('id').execute()).length, before.length)
    })

    test('a deposit recorded in a transaction that rolls back leaves neither transaction nor job', async () => {
      const { userId, accountId } = await openAccount()
      let id = ''
      await assert.rejects(
        suite.ctx.database.db.transaction().execute(async (tx) => {
          id = (await suite.ctx.services.deposits.record(tx, { organizationId: org(), userId, accountId, asset: 'BTC', amount: '2', network: 'bitcoin', reference: nextReference() })).transactionId
          throw new Error('the caller changed its mind')
        }),
        /changed its mind/,
      )
      assertError(await get(userId, id), 404, 'entity_not_found')
      assert.equal((await suite.ctx.database.db.selectFrom('jobs').select('id').where('payload', '@>', JSON.stringify({ flowId: id }) as never).execute()).length, 0)
    })

    test('a deposit to an account archived before it settles fails with a reason and moves no money', async () => {
      const { userId, accountId } = await openAccount()
      const { transactionId } = await record({ userId, accountId, amount: '0.1' })
      const archived = await suite.ctx.request({ method: 'DELETE', url: `/core/accounts/${accountId}`, headers: bearer(suite.token, userId) })
      assert.equal(archived.status, 204, archived.body)
      await suite.ctx.services.worker.drain()
      const failed = (await get(userId, transactionId)).json<{ transaction: Transaction }>().transaction
      assert.equal(failed.status, 'failed')
      assert.deepEqual(failed.statusDetails, { reason: 'unspecified-error' })
      assert.equal(await postingsOf(transactionId), 0)
      const job = await suite.ctx.database.db.selectFrom('jobs').selectAll().where('payload', '@>', JSON.stringify({ flowId: transactionId }) as never).executeTakeFirstOrThrow()
      assert.equal(job.status, 'completed')
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })

    test('deposits due together settle together: each its own posting and events, one balance event per account', async () => {
      const a = await openAccount()
      const b = await openAccount()
      const amounts = ['0.1', '0.2', '0.3']
      const ids = [
        ...(await Promise.all(amounts.map((amount) => record({ ...a, amount })))).map((r) => r.transactionId),
        (await record({ ...b, amount: '0.05' })).transactionId,
      ]
      assert.ok((await suite.ctx.services.worker.drain()) >= ids.length)
      assert.equal(await balance(a.userId, a.accountId), '0.6')
      assert.equal(await balance(b.userId, b.accountId), '0.05')
      for (const id of ids) {
        assert.equal(await postingsOf(id), 1)
        const events = await eventsAbout(suite.ctx.database.db, org(), { type: 'transaction', id })
        assert.deepEqual(events.map((e) => e.type), ['core.transaction.created', 'core.transaction.status-changed'])
      }
      // Settled in one database transaction: one balance event for the account, with the balance all three left.
      const balanceEvents = (await eventsAbout(suite.ctx.database.db, org(), { type: 'account', id: a.accountId })).filter((e) => e.type === 'core.account.balance-changed')
      assert.equal(balanceEvents.length, 1)
      assert.equal((balanceEvents[0]!.data as { account: { balance: { total: string } } }).account.balance.total, '0.6')

      // One deposit that cannot settle does not hold up the others due with it: it fails alone.
      const c = await openAccount()
      const doomed = await openAccount()
      const more = [(await record({ ...c, amount: '1' })).transactionId, (await record({ ...doomed, amount: '2' })).transactionId, (await record({ ...c, amount: '3' })).transactionId]
      assert.equal((await suite.ctx.request({ method: 'DELETE', url: `/core/accounts/${doomed.accountId}`, headers: bearer(suite.token, doomed.userId) })).status, 204)
      await suite.ctx.services.worker.drain()
      const statuses = await Promise.all(more.map(async (id, n) => (await get(n === 1 ? doomed.userId : c.userId, id)).json<{ transaction: Transaction }>().transaction.status))
      assert.deepEqual(statuses, ['completed', 'failed', 'completed'])
      assert.equal(await balance(c.userId, c.accountId), '4')
      const jobs = await suite.ctx.database.db.selectFrom('jobs').select('status').where('type', '=', 'flow:deposit').where('status', '!=', 'completed').execute()
      assert.deepEqual(jobs, [])
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })

    test('lists the user\'s transactions newest first with pagination and a status filter', async () => {
      const { userId, accountId } = await openAccount()
      const second = await openAccount(suite.token, 'ETH')
      const ids: string[] = []
      for (let i = 1; i <= 3; i++) ids.push((await record({ userId, accountId, amount: String(i) })).transactionId)
      await suite.ctx.services.worker.drain()
      ids.push((await record({ userId, accountId, amount: '4' })).transactionId)

      const page1 = await list(userId, '?perPage=2')
      assert.equal(page1.status, 200, page1.body)
      const body = page1.json<{ transactions: Transaction[]; pagination: { first: string; next?: string } }>()
      assert.deepEqual(body.transactions.map((t) => t.id), [ids[3], ids[2]])
      assert.ok(body.pagination.next)
      const next = await list(userId, new URL(body.pagination.next).search)
      assert.deepEqual(next.json<{ transactions: Transaction[] }>().transactions.map((t) => t.id), [ids[1], ids[0]])
      const processing = await list(userId, '?status=processing')
      assert.deepEqual(processing.json<{ transactions: Transaction[] }>().transactions.map((t) => t.id), [ids[3]])
      const completed = await list(userId, '?status=completed,failed')
      assert.equal(completed.json<{ transactions: Transaction[] }>().transactions.length, 3)

      const ofAccount = await listOfAccount(userId, accountId)
      assert.equal(ofAccount.status, 200, ofAccount.body)
      assert.equal(ofAccount.json<{ transactions: Transaction[] }>().transactions.length, 4)
      assert.deepEqual((await list(second.userId)).json<{ transactions: Transaction[] }>().transactions, [])
      assertError(await list(userId, '?status=pending'), 400, 'request_invalid')
      assertError(await list(userId, '?perPage=0'), 400, 'request_invalid')
      await suite.ctx.services.worker.drain()
    })

    test('another user\'s or organization\'s transactions and accounts are not found', async () => {
      const { userId, accountId } = await openAccount()
      const { transactionId } = await record({ userId, accountId })
      const other = await openAccount()
      assertError(await get(other.userId, transactionId), 404, 'entity_not_found')
      assert.equal(assertError(await get(userId, UNKNOWN_ID), 404, 'entity_not_found')?.entity, 'transaction')
      assert.equal(assertError(await get(userId, 'nope'), 404, 'entity_not_found')?.entity, 'transaction')
      assert.equal(assertError(await listOfAccount(other.userId, accountId), 404, 'entity_not_found')?.entity, 'account')
      assertError(await listOfAccount(userId, UNKNOWN_ID), 404, 'entity_not_found')
      assert.equal(assertError(await listOfAccount(userId, 'nope'), 404, 'entity_not_found')?.entity, 'account')
      assertError(await list(userId, '?until=yesterday'), 400, 'request_invalid')
      assertError(await list(userId, '?page=abc'), 400, 'request_invalid')
      assertError(await list(userId, '?perPage=101'), 400, 'request_invalid')

      const foreignToken = await suite.ctx.token(await suite.ctx.newClient())
      const foreignUser = (await suite.ctx.createUser(foreignToken)).id
      assertError(await get(foreignUser, transactionId, foreignToken), 404, 'entity_not_found')
      assertError(await listOfAccount(foreignUser, accountId, '', foreignToken), 404, 'entity_not_found')
      assertError(await get(userId, transactionId, foreignToken), 404, 'entity_not_found')
      assert.deepEqual((await list(foreignUser, '', foreignToken)).json<{ transactions: unknown[] }>().transactions, [])
      await suite.ctx.services.worker.drain()
    })

    test('an archived account\'s transactions are not listed any more', async () => {
      const { userId, accountId } = await openAccount()
      const archived = await suite.ctx.request({ method: 'DELETE', url: `/core/accounts/${accountId}`, headers: bearer(suite.token, userId) })
      assert.equal(archived.status, 204, archived.body)
      assert.equal(assertError(await listOfAccount(userId, accountId), 404, 'entity_not_found')?.entity, 'account')
    })

    test('metadata on a transaction is the owner\'s only', async () => {
      const { userId, accountId } = await openAccount()
      const { transactionId } = await record({ userId, accountId })
      const put = await suite.ctx.request({ method: 'PUT', url: `/core/transactions/${transactionId}/metadata`, headers: bearer(suite.token, userId), payload: { note: 'salary' } })
      assert.equal(put.status, 201, put.body)
      const read = await suite.ctx.request({ method: 'GET', url: `/core/transactions/${transactionId}/metadata`, headers: bearer(suite.token, userId) })
      assert.equal(read.status, 200, read.body)
      assert.deepEqual(read.json(), put.json())
      const other = await openAccount()
      assertError(await suite.ctx.request({ method: 'GET', url: `/core/transactions/${transactionId}/metadata`, headers: bearer(suite.token, other.userId) }), 404, 'entity_not_found')
      await suite.ctx.services.worker.drain()
    })
  })
}

if (TEST_DATABASE_URL) {
  describe('deposit settlement by several workers [postgres]', () => {
    const suite = useApp('postgres')

    test('two workers settling batches side by side settle every deposit once, with no deadlock and no retry', async () => {
      const org = suite.ctx.client.organizationId
      const userId = (await suite.ctx.createUser(suite.token)).id
      const accounts: string[] = []
      for (let i = 0; i < 5; i++) {
        const response = await suite.ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(suite.token, userId), payload: { label: `Account ${i}`, asset: 'BTC' } })
        accounts.push(response.json<{ account: { id: string } }>().account.id)
      }
      const ids: string[] = []
      for (let n = 0; n < 300; n++) {
        const { transactionId } = await suite.ctx.services.deposits.record(suite.ctx.database.db, {
          organizationId: org, userId, accountId: accounts[n % accounts.length]!, asset: 'BTC', amount: '0.001', network: 'bitcoin', reference: `parallel-${process.pid}-${n}`,
        })
        ids.push(transactionId)
      }
      // A second process's worker: its own pool, ledger and deposit handler on the same schema.
      const second = await openDatabase({ ...suite.ctx.config, databaseUrl: suite.ctx.database.url!, databaseDirectUrl: suite.ctx.database.directUrl!, databasePoolSize: 8 })
      const handlers = new JobHandlers()
      const secondLedger = new LedgerService({ db: second.db, assets: { decimalsOf: (code) => (code === 'BTC' ? 8 : undefined) } })
      // A worker's transactions service: it never reads accounts or executes quotes.
      const secondTransactions = new TransactionsService({ db: second.db, accounts: { ownedAccount: async () => null }, quotes: { use: async () => assert.fail('no quotes here') }, canonicalAddress: (_network, address) => address })
      defineDepositFlow({
        runner: new FlowRunner({ db: second.db, jobs: handlers }),
        ledger: secondLedger,
        transactions: secondTransactions,
        batchSize: 7,
        // These deposits are far below the travel rule's threshold.
        travelRule: {
          db: second.db,
          requests: suite.ctx.services.requestsForInformation,
          transactions: secondTransactions,
          ledger: secondLedger,
          directory: suite.ctx.services.externalAccounts,
          screening: { valueUsd: async () => '1', declared: async () => false, isCrypto: () => true },
        },
      })
      const workers = [
        new Worker({ db: suite.ctx.database.db, handlers: suite.ctx.services.jobs, pollIntervalMs: 5, concurrency: 3, leaseMs: 30_000 }),
        new Worker({ db: second.db, handlers, pollIntervalMs: 5, concurrency: 3, leaseMs: 30_000 }),
      ]
      try {
        for (const worker of workers) worker.start()
        const deadline = Date.now() + 60_000
        for (;;) {
          const left = await suite.ctx.database.db.selectFrom('transactions').select('id').where('id', 'in', ids).where('status', '=', 'processing').execute()
          if (left.length === 0) break
          assert.ok(Date.now() < deadline, `${left.length} deposits still processing`)
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      } finally {
        await Promise.all(workers.map((worker) => worker.stop(5_000)))
        await second.close()
      }
      const settled = await suite.ctx.database.db.selectFrom('transactions').select('status').where('id', 'in', ids).execute()
      assert.ok(settled.every((row) => row.status === 'completed'))
      const postings = await suite.ctx.database.db.selectFrom('ledger_transactions').select('reference').where('organization_id', '=', org).where('reference', 'in', ids).execute()
      assert.equal(postings.length, ids.length)
      const jobs = await suite.ctx.database.db.selectFrom('jobs').select(['status', 'attempts', 'locked_by']).where('type', '=', 'flow:deposit').where('organization_id', '=', org).execute()
      assert.ok(jobs.every((job) => job.status === 'completed' && job.attempts === 1), 'every settlement ran once: no deadlock, no lost lease')
      for (const accountId of accounts) {
        const response = await suite.ctx.request({ method: 'GET', url: `/core/accounts/${accountId}`, headers: bearer(suite.token, userId) })
        assert.equal(response.json<{ account: { balance: { total: string } } }>().account.balance.total, '0.06')
      }
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })
  })
}
