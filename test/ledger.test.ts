import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { sql } from 'kysely'
import { openDatabase } from '../src/db/database.ts'
import { DomainError } from '../src/lib/errors.ts'
import { uuidv7 } from '../src/lib/ids.ts'
import { LedgerService } from '../src/modules/ledger/ledger.service.ts'
import { ENGINES, TEST_DATABASE_URL, useApp, type TestContext } from './helpers.ts'

const DECIMALS: Record<string, number> = { BTC: 8, EUR: 2, GBP: 2, ETH: 18 }

async function openAccounts(ctx: TestContext, count: number, asset = 'BTC'): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const id = uuidv7()
    await ctx.services.ledger.openAccount(ctx.database.db, { organizationId: ctx.client.organizationId, id, asset, at: new Date() })
    ids.push(id)
  }
  return ids
}

async function balanceOf(ctx: TestContext, id: string): Promise<{ total: string; available: string }> {
  const balance = (await ctx.services.ledger.balances(ctx.database.db, ctx.client.organizationId, [id])).get(id)
  assert.ok(balance, `no account ${id}`)
  return { total: balance.total, available: balance.available }
}

function rejectsWith(code: string) {
  return (error: unknown) => {
    assert.ok(error instanceof DomainError, String(error))
    assert.equal(error.code, code, error.message)
    return true
  }
}

for (const engine of ENGINES) {
  describe(`ledger [${engine}]`, () => {
    const suite = useApp(engine)
    const org = () => suite.ctx.client.organizationId
    const ledger = () => suite.ctx.services.ledger
    const clearing = (asset = 'BTC', network = 'bitcoin') => ledger().systemAccount(org(), { kind: 'clearing', network, asset })

    test('a deposit and a transfer move money and leave balanced entries', async () => {
      const [alice, bob] = await openAccounts(suite.ctx, 2)
      const rail = await clearing()
      const deposit = await ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount: '0.5' })
      assert.equal(deposit.replayed, false)
      await ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!, to: bob!, amount: '0.12345678' })
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.37654322', available: '0.37654322' })
      assert.deepEqual(await balanceOf(suite.ctx, bob!), { total: '0.12345678', available: '0.12345678' })
      assert.deepEqual(await ledger().entries(org(), deposit.transactionId), [
        { accountId: rail, asset: 'BTC', amount: '-0.5' },
        { accountId: alice!, asset: 'BTC', amount: '0.5' },
      ])
      // The clearing account stands for what the outside world owes: negative by nature.
      assert.equal((await balanceOf(suite.ctx, rail)).total.startsWith('-'), true)
      assert.deepEqual(await ledger().check(), [])
    })

    test('a system account is created once per organization, kind, network and asset', async () => {
      const first = await clearing('EUR', 'sepa')
      assert.equal(await clearing('EUR', 'sepa'), first)
      assert.notEqual(await clearing('EUR', 'swift'), first)
      const fees = await ledger().systemAccount(org(), { kind: 'fees', asset: 'EUR' })
      assert.notEqual(fees, first)
      assert.equal(await ledger().systemAccount(org(), { kind: 'fees', asset: 'EUR' }), fees)
      await assert.rejects(ledger().systemAccount(org(), { kind: 'fees', asset: 'NOPE' }), rejectsWith('entity_not_found'))
    })

    test('insufficient funds refuse the movement and change nothing', async () => {
      const [alice, bob] = await openAccounts(suite.ctx, 2)
      await ledger().transfer({ organizationId: org(), type: 'deposit', from: await clearing(), to: alice!, amount: '1' })
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!, to: bob!, amount: '1.00000001' }), rejectsWith('insufficient_balance'))
      await assert.rejects(ledger().placeHold({ organizationId: org(), accountId: alice!, amount: '1.1' }), rejectsWith('insufficient_balance'))
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '1', available: '1' })
      assert.deepEqual(await balanceOf(suite.ctx, bob!), { total: '0', available: '0' })
      // The fees account may never go negative either.
      const fees = await ledger().systemAccount(org(), { kind: 'fees', asset: 'BTC' })
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'refund', from: fees, to: alice!, amount: '1' }), rejectsWith('insufficient_balance'))
      assert.deepEqual(await ledger().check(), [])
    })

    test('amounts: exact, never rounded, refused beyond the asset decimals or malformed', async () => {
      const [alice, bob] = await openAccounts(suite.ctx, 2, 'EUR')
      const rail = await clearing('EUR', 'sepa')
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount: '1.001' }), rejectsWith('transaction_amount_invalid'))
      for (const amount of ['0', '-1', '1e2', 'abc', '']) {
        await assert.rejects(ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount }), rejectsWith('transaction_amount_invalid'))
      }
      await ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount: '0.10' })
      await ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount: '0.20' })
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.3', available: '0.3' })
      // Different assets on the two sides never balance.
      const [btc] = await openAccounts(suite.ctx, 1, 'BTC')
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!, to: btc!, amount: '0.1' }), rejectsWith('operation_not_allowed'))
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!, to: alice!, amount: '0.1' }), rejectsWith('operation_not_allowed'))
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!, to: uuidv7(), amount: '0.1' }), rejectsWith('entity_not_found'))
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!, to: 'not-an-id', amount: '0.1' }), rejectsWith('entity_not_found'))
      await assert.rejects(ledger().placeHold({ organizationId: org(), accountId: "1' or '1'='1", amount: '0.1' }), rejectsWith('entity_not_found'))
      await assert.rejects(ledger().releaseHold({ organizationId: org(), holdId: '' }), rejectsWith('entity_not_found'))
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!, to: alice!.toUpperCase(), amount: '0.1' }), rejectsWith('operation_not_allowed'))
      await ledger().transfer({ organizationId: org(), type: 'transfer', from: alice!.toUpperCase(), to: bob!, amount: '0.1' })
      await ledger().transfer({ organizationId: org(), type: 'transfer', from: bob!, to: alice!, amount: '0.1' })
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.3', available: '0.3' })
      assert.deepEqual(await balanceOf(suite.ctx, bob!), { total: '0', available: '0' })
    })

    test('a posting retried with its reference posts once; a reference reused for another movement is refused', async () => {
      const [alice] = await openAccounts(suite.ctx, 1)
      const rail = await clearing()
      const reference = `deposit-${uuidv7()}`
      const first = await ledger().transfer({ organizationId: org(), type: 'deposit', reference, from: rail, to: alice!, amount: '0.3' })
      const retry = await ledger().transfer({ organizationId: org(), type: 'deposit', reference, from: rail, to: alice!, amount: '0.3' })
      assert.deepEqual(retry, { transactionId: first.transactionId, replayed: true })
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.3', available: '0.3' })
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'deposit', reference, from: rail, to: alice!, amount: '0.4' }), rejectsWith('ledger_reference_reused'))
      const holdReference = `hold-${uuidv7()}`
      const hold = await ledger().placeHold({ organizationId: org(), accountId: alice!, amount: '0.1', reference: holdReference })
      const again = await ledger().placeHold({ organizationId: org(), accountId: alice!, amount: '0.1', reference: holdReference })
      assert.equal(again.id, hold.id)
      assert.equal(again.replayed, true)
      await assert.rejects(ledger().placeHold({ organizationId: org(), accountId: alice!, amount: '0.2', reference: holdReference }), rejectsWith('ledger_reference_reused'))
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.3', available: '0.2' })
      assert.deepEqual(await ledger().check(), [])
    })

    test('postings made together: in order, each its own transaction, replays and references as if one by one', async () => {
      const [alice, bob] = await openAccounts(suite.ctx, 2)
      const rail = await clearing()
      const calls: string[][] = []
      ledger().onBalanceChanged(async (_tx, changed) => void calls.push(changed.filter((b) => b.id === alice || b.id === bob).map((b) => `${b.id === alice ? 'alice' : 'bob'} ${b.total}`)))
      const deposit = (reference: string, amount: string) => ({ organizationId: org(), type: 'deposit', reference, legs: [{ accountId: rail, amount: `-${amount}` }, { accountId: alice!, amount }] })
      const first = `deposit-${uuidv7()}`
      // Bob is paid from money that only the deposit before it in the same call brings.
      const postings = await ledger().postAll([
        deposit(first, '1'),
        { organizationId: org(), type: 'transfer', legs: [{ accountId: alice!, amount: '-0.75' }, { accountId: bob!, amount: '0.75' }] },
        deposit(first, '1'),
      ])
      assert.equal(new Set(postings.map((p) => p.transactionId)).size, 2)
      assert.deepEqual(postings.map((p) => p.replayed), [false, false, true])
      assert.equal(postings[2]!.transactionId, postings[0]!.transactionId)
      assert.deepEqual(await ledger().entries(org(), postings[1]!.transactionId), [
        { accountId: alice!, asset: 'BTC', amount: '-0.75' },
        { accountId: bob!, asset: 'BTC', amount: '0.75' },
      ])
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.25', available: '0.25' })
      assert.deepEqual(await balanceOf(suite.ctx, bob!), { total: '0.75', available: '0.75' })
      // The listeners hear once, with the balances the whole call left.
      assert.deepEqual(calls.filter((c) => c.length > 0).map((c) => [...c].sort()), [['alice 0.25', 'bob 0.75']])

      // A replay of an earlier call posts nothing; a reused reference or a step the balances do not cover refuses
      // the whole call, and nothing of it stays.
      assert.deepEqual(await ledger().postAll([deposit(first, '1')]), [{ transactionId: postings[0]!.transactionId, replayed: true }])
      await assert.rejects(ledger().postAll([deposit(`deposit-${uuidv7()}`, '2'), deposit(first, '3')]), rejectsWith('ledger_reference_reused'))
      const overdrawn = { organizationId: org(), type: 'transfer', legs: [{ accountId: alice!, amount: '-0.5' }, { accountId: bob!, amount: '0.5' }] }
      await assert.rejects(ledger().postAll([deposit(`deposit-${uuidv7()}`, '0.2'), overdrawn]), rejectsWith('insufficient_balance'))
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.25', available: '0.25' })
      assert.deepEqual(await ledger().postAll([]), [])
      const other = (await suite.ctx.newClient()).organizationId
      await assert.rejects(ledger().postAll([deposit(`deposit-${uuidv7()}`, '1'), { ...deposit(`deposit-${uuidv7()}`, '1'), organizationId: other }]), /one organization/)
      assert.deepEqual(await ledger().check(), [])
    })

    test('holds: lower available only; release gives it back once; capture posts and frees the rest', async () => {
      const [alice, bob] = await openAccounts(suite.ctx, 2, 'GBP')
      const rail = await clearing('GBP', 'fps')
      const fees = await ledger().systemAccount(org(), { kind: 'fees', asset: 'GBP' })
      await ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount: '100' })

      const released = await ledger().placeHold({ organizationId: org(), accountId: alice!, amount: '30' })
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '100', available: '70' })
      assert.equal((await ledger().releaseHold({ organizationId: org(), holdId: released.id })).replayed, false)
      assert.equal((await ledger().releaseHold({ organizationId: org(), holdId: released.id })).replayed, true)
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '100', available: '100' })
      await assert.rejects(
        ledger().captureHold({ organizationId: org(), holdId: released.id, type: 'withdrawal', credits: [{ accountId: rail, amount: '30' }] }),
        rejectsWith('hold_not_open'),
      )

      const hold = await ledger().placeHold({ organizationId: org(), accountId: alice!, amount: '50' })
      await assert.rejects(
        ledger().captureHold({ organizationId: org(), holdId: hold.id, type: 'withdrawal', credits: [{ accountId: rail, amount: '50.01' }] }),
        rejectsWith('transaction_amount_invalid'),
      )
      const capture = { organizationId: org(), holdId: hold.id, type: 'withdrawal', credits: [{ accountId: rail, amount: '39.5' }, { accountId: fees, amount: '0.5' }] }
      const posting = await ledger().captureHold(capture)
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '60', available: '60' })
      assert.deepEqual(await balanceOf(suite.ctx, fees), { total: '0.5', available: '0.5' })
      assert.deepEqual(await ledger().captureHold(capture), { transactionId: posting.transactionId, replayed: true })
      await assert.rejects(ledger().captureHold({ ...capture, credits: [{ accountId: bob!, amount: '40' }] }), rejectsWith('hold_not_open'))
      await assert.rejects(ledger().releaseHold({ organizationId: org(), holdId: hold.id }), rejectsWith('hold_not_open'))
      assert.equal((await ledger().hold(org(), hold.id)).status, 'captured')
      await assert.rejects(ledger().releaseHold({ organizationId: org(), holdId: uuidv7() }), rejectsWith('entity_not_found'))
      assert.deepEqual(await ledger().check(), [])
    })

    test('the database itself refuses a negative available balance or a total below it', async () => {
      const [alice] = await openAccounts(suite.ctx, 1)
      await ledger().transfer({ organizationId: org(), type: 'deposit', from: await clearing(), to: alice!, amount: '1' })
      const db = suite.ctx.database.db
      await assert.rejects(sql`update ledger_accounts set available = -1, total = -1 where id = ${alice}`.execute(db), /ledger_accounts_available_not_negative/)
      await assert.rejects(sql`update ledger_accounts set available = 2 where id = ${alice}`.execute(db), /ledger_accounts_total_covers_available/)
      await assert.rejects(
        sql`insert into ledger_holds (organization_id, id, account_id, asset, amount, status, request_hash, created_at, updated_at)
          values (${org()}, ${uuidv7()}, ${alice}, 'BTC', 0, 'open', '', now(), now())`.execute(db),
        /ledger_holds_amount_positive/,
      )
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '1', available: '1' })
    })

    test('a movement is one database transaction: a failure anywhere in it, or in the caller\'s, leaves nothing', async () => {
      const [alice, doomed] = await openAccounts(suite.ctx, 2)
      const rail = await clearing()
      const db = suite.ctx.database.db
      const transactions = async () => Number((await sql<{ n: string }>`select count(*)::text as n from ledger_transactions where organization_id = ${org()}`.execute(db)).rows[0]!.n)
      // A listener (where events are recorded) failing for one account undoes the whole movement.
      ledger().onBalanceChanged(async (_tx, changed) => {
        if (changed.some((b) => b.id === doomed)) throw new Error('event store unavailable')
      })
      const before = await transactions()
      await assert.rejects(ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: doomed!, amount: '1' }), /event store unavailable/)
      assert.deepEqual(await balanceOf(suite.ctx, doomed!), { total: '0', available: '0' })
      assert.equal(await transactions(), before)

      // In the caller's transaction, the posting commits or rolls back with the caller's own work.
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          await ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount: '2' }, { tx })
          throw new Error('the caller changed its mind')
        }),
        /changed its mind/,
      )
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0', available: '0' })
      await db.transaction().execute((tx) => ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: alice!, amount: '2' }, { tx }))
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '2', available: '2' })
      assert.equal(await transactions(), before + 1)
      assert.deepEqual(await ledger().check(), [])
    })

    test('another organization cannot move, hold or read money of accounts it does not own', async () => {
      const [alice] = await openAccounts(suite.ctx, 1)
      await ledger().transfer({ organizationId: org(), type: 'deposit', from: await clearing(), to: alice!, amount: '1' })
      const hold = await ledger().placeHold({ organizationId: org(), accountId: alice!, amount: '0.5' })
      const other = (await suite.ctx.newClient()).organizationId
      const theirs = await ledger().systemAccount(other, { kind: 'clearing', network: 'bitcoin', asset: 'BTC' })
      await assert.rejects(ledger().transfer({ organizationId: other, type: 'transfer', from: alice!, to: theirs, amount: '0.1' }), rejectsWith('entity_not_found'))
      await assert.rejects(ledger().placeHold({ organizationId: other, accountId: alice!, amount: '0.1' }), rejectsWith('entity_not_found'))
      await assert.rejects(ledger().releaseHold({ organizationId: other, holdId: hold.id }), rejectsWith('entity_not_found'))
      assert.equal((await ledger().balances(suite.ctx.database.db, other, [alice!])).size, 0)
      assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '1', available: '0.5' })
    })

    test('property: random deposits, transfers, holds, releases and captures keep every invariant', async () => {
      const amount = fc.integer({ min: 1, max: 5_000_000 }).map((sats) => new BigNumber(sats).shiftedBy(-8).toFixed())
      const step = fc.oneof(
        fc.record({ kind: fc.constant('deposit' as const), to: fc.nat(2), amount }),
        fc.record({ kind: fc.constant('transfer' as const), from: fc.nat(2), to: fc.nat(2), amount }),
        fc.record({ kind: fc.constant('hold' as const), account: fc.nat(2), amount }),
        fc.record({ kind: fc.constant('release' as const), hold: fc.nat() }),
        fc.record({ kind: fc.constant('capture' as const), hold: fc.nat(), to: fc.nat(2), share: fc.integer({ min: 1, max: 100 }), fee: fc.boolean() }),
        // Several movements posted together: all or nothing, each checked against what the ones before it left.
        fc.record({ kind: fc.constant('batch' as const), moves: fc.array(fc.record({ from: fc.nat(3), to: fc.nat(2), amount }), { minLength: 1, maxLength: 4 }) }),
      )
      let performed = 0
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30, size: 'max' }), async (steps) => {
          const accounts = await openAccounts(suite.ctx, 3)
          const rail = await clearing()
          const fees = await ledger().systemAccount(org(), { kind: 'fees', asset: 'BTC' })
          const model = new Map(accounts.map((id) => [id, { total: new BigNumber(0), available: new BigNumber(0) }]))
          const holds: { id: string; account: string; amount: BigNumber; status: 'open' | 'released' | 'captured'; capturedWith?: string }[] = []
          const expectRefusal = async (work: Promise<unknown>, code: string) => assert.rejects(work, rejectsWith(code))

          for (const s of steps) {
            if (s.kind === 'deposit') {
              await ledger().transfer({ organizationId: org(), type: 'deposit', from: rail, to: accounts[s.to]!, amount: s.amount })
              const m = model.get(accounts[s.to]!)!
              m.total = m.total.plus(s.amount)
              m.available = m.available.plus(s.amount)
            } else if (s.kind === 'transfer') {
              if (s.from === s.to) continue
              const from = model.get(accounts[s.from]!)!
              const to = model.get(accounts[s.to]!)!
              const work = ledger().transfer({ organizationId: org(), type: 'transfer', from: accounts[s.from]!, to: accounts[s.to]!, amount: s.amount })
              if (from.available.isLessThan(s.amount)) {
                await expectRefusal(work, 'insufficient_balance')
              } else {
                await work
                from.total = from.total.minus(s.amount)
                from.available = from.available.minus(s.amount)
                to.total = to.total.plus(s.amount)
                to.available = to.available.plus(s.amount)
              }
            } else if (s.kind === 'batch') {
              // `from` 3 is the rail (a deposit); a move from an account to itself is left out.
              const moves = s.moves.filter((move) => move.from !== move.to)
              if (moves.length === 0) continue
              const next = new Map([...model].map(([id, m]) => [id, { total: m.total, available: m.available }]))
              let covered = true
              for (const move of moves) {
                const to = next.get(accounts[move.to]!)!
                if (move.from < 3) {
                  const from = next.get(accounts[move.from]!)!
                  if (from.available.isLessThan(move.amount)) covered = false
                  from.total = from.total.minus(move.amount)
                  from.available = from.available.minus(move.amount)
                }
                to.total = to.total.plus(move.amount)
                to.available = to.available.plus(move.amount)
              }
              const work = ledger().postAll(
                moves.map((move) => ({
                  organizationId: org(),
                  type: move.from < 3 ? 'transfer' : 'deposit',
                  legs: [{ accountId: move.from < 3 ? accounts[move.from]! : rail, amount: `-${move.amount}` }, { accountId: accounts[move.to]!, amount: move.amount }],
                })),
              )
              if (!covered) {
                await expectRefusal(work, 'insufficient_balance')
              } else {
                assert.equal((await work).length, moves.length)
                for (const [id, m] of next) model.set(id, m)
              }
            } else if (s.kind === 'hold') {
              const m = model.get(accounts[s.account]!)!
              const work = ledger().placeHold({ organizationId: org(), accountId: accounts[s.account]!, amount: s.amount })
              if (m.available.isLessThan(s.amount)) {
                await expectRefusal(work, 'insufficient_balance')
              } else {
                const hold = await work
                m.available = m.available.minus(s.amount)
                holds.push({ id: hold.id, account: accounts[s.account]!, amount: new BigNumber(s.amount), status: 'open' })
              }
            } else if (holds.length > 0) {
              const hold = holds[s.hold % holds.length]!
              const m = model.get(hold.account)!
              if (s.kind === 'release') {
                const work = ledger().releaseHold({ organizationId: org(), holdId: hold.id })
                if (hold.status === 'captured') {
                  await expectRefusal(work, 'hold_not_open')
                } else {
                  await work
                  if (hold.status === 'open') m.available = m.available.plus(hold.amount)
                  hold.status = 'released'
                }
              } else {
                const captured = hold.amount.times(s.share).dividedBy(100).decimalPlaces(8, BigNumber.ROUND_DOWN)
                const fee = s.fee ? captured.dividedBy(10).decimalPlaces(8, BigNumber.ROUND_DOWN) : new BigNumber(0)
                const destination = accounts[s.to]!
                const credits = [{ accountId: destination, amount: captured.minus(fee).toFixed() }, ...(fee.isZero() ? [] : [{ accountId: fees, amount: fee.toFixed() }])]
                const work = ledger().captureHold({ organizationId: org(), holdId: hold.id, type: 'payment', credits })
                if (hold.status === 'captured' && hold.capturedWith === JSON.stringify(credits)) {
                  // The same capture again is a retry: it returns the first posting and changes nothing.
                  assert.equal((await work).replayed, true)
                } else if (hold.status !== 'open' || captured.minus(fee).isZero()) {
                  await assert.rejects(work)
                } else {
                  await work
                  m.total = m.total.minus(captured)
                  m.available = m.available.plus(hold.amount.minus(captured))
                  const d = model.get(destination)!
                  d.total = d.total.plus(captured.minus(fee))
                  d.available = d.available.plus(captured.minus(fee))
                  hold.status = 'captured'
                  hold.capturedWith = JSON.stringify(credits)
                }
              }
            }
            const balances = await ledger().balances(suite.ctx.database.db, org(), accounts)
            for (const [id, expected] of model) {
              assert.deepEqual(balances.get(id) && { total: balances.get(id)!.total, available: balances.get(id)!.available }, { total: expected.total.toFixed(), available: expected.available.toFixed() })
            }
            assert.deepEqual(await ledger().check(), [])
            performed++
          }
        }),
        { numRuns: 40 },
      )
      // About 15 steps a run (some skipped: a transfer to itself); 40 runs leave a wide margin above 200.
      assert.ok(performed > 200, `only ${performed} steps were checked`)
    })
  })
}

if (TEST_DATABASE_URL) {
  describe('ledger under parallel load [postgres]', () => {
    const suite = useApp('postgres')

    /** A ledger over its own large pool on the suite's schema: movements really run in parallel. */
    async function parallelLedger(poolSize = 50) {
      const database = await openDatabase({ ...suite.ctx.config, databaseUrl: suite.ctx.database.url!, databaseDirectUrl: suite.ctx.database.directUrl!, databasePoolSize: poolSize })
      return { ledger: new LedgerService({ db: database.db, assets: { decimalsOf: (code) => DECIMALS[code] } }), close: () => database.close() }
    }

    test('200 parallel movements against an account that covers half of them: exactly half succeed', async () => {
      const org = suite.ctx.client.organizationId
      const [hot, ...destinations] = await openAccounts(suite.ctx, 5, 'EUR')
      const rail = await suite.ctx.services.ledger.systemAccount(org, { kind: 'clearing', network: 'sepa', asset: 'EUR' })
      await suite.ctx.services.ledger.transfer({ organizationId: org, type: 'deposit', from: rail, to: hot!, amount: '100' })
      const { ledger, close } = await parallelLedger()
      try {
        // Transfers to accounts on both sides of the hot one in lock order, withdrawals to clearing, and holds.
        const movements = Array.from({ length: 200 }, (_, i) => {
          if (i % 4 === 3) return ledger.placeHold({ organizationId: org, accountId: hot!, amount: '1' })
          const to = i % 4 === 2 ? rail : destinations[i % destinations.length]!
          return ledger.transfer({ organizationId: org, type: 'transfer', from: hot!, to, amount: '1' })
        })
        const results = await Promise.allSettled(movements)
        const succeeded = results.filter((r) => r.status === 'fulfilled').length
        const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as DomainError)
        assert.equal(succeeded, 100)
        assert.equal(failures.length, 100)
        for (const failure of failures) {
          assert.ok(failure instanceof DomainError, String(failure))
          assert.equal(failure.code, 'insufficient_balance')
        }
        assert.deepEqual(await balanceOf(suite.ctx, hot!), { total: String(100 - results.filter((r, i) => r.status === 'fulfilled' && i % 4 !== 3).length), available: '0' })
        assert.deepEqual(await suite.ctx.services.ledger.check(), [])
      } finally {
        await close()
      }
    })

    test('crossing transfers between the same accounts never deadlock or lose an update', async () => {
      const org = suite.ctx.client.organizationId
      const accounts = await openAccounts(suite.ctx, 4, 'BTC')
      const rail = await suite.ctx.services.ledger.systemAccount(org, { kind: 'clearing', network: 'bitcoin', asset: 'BTC' })
      for (const id of accounts) await suite.ctx.services.ledger.transfer({ organizationId: org, type: 'deposit', from: rail, to: id, amount: '10' })
      const { ledger, close } = await parallelLedger()
      try {
        const movements = Array.from({ length: 300 }, (_, i) => {
          const from = accounts[i % 4]!
          const to = accounts[(i * 7 + 1) % 4 === i % 4 ? (i + 1) % 4 : (i * 7 + 1) % 4]!
          return ledger.post({ organizationId: org, type: 'transfer', legs: [{ accountId: from, amount: '-0.01' }, { accountId: to, amount: '0.01' }] })
        })
        const results = await Promise.allSettled(movements)
        assert.deepEqual(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)), [])
        const balances = await suite.ctx.services.ledger.balances(suite.ctx.database.db, org, accounts)
        const sum = [...balances.values()].reduce((total, b) => total.plus(b.total), new BigNumber(0))
        assert.equal(sum.toFixed(), '40')
        assert.deepEqual(await suite.ctx.services.ledger.check(), [])
      } finally {
        await close()
      }
    })

    test('the same reference posted 50 times in parallel posts once', async () => {
      const org = suite.ctx.client.organizationId
      const [alice] = await openAccounts(suite.ctx, 1, 'BTC')
      const rail = await suite.ctx.services.ledger.systemAccount(org, { kind: 'clearing', network: 'bitcoin', asset: 'BTC' })
      const { ledger, close } = await parallelLedger()
      try {
        const reference = `deposit-${uuidv7()}`
        const results = await Promise.all(
          Array.from({ length: 50 }, () => ledger.transfer({ organizationId: org, type: 'deposit', reference, from: rail, to: alice!, amount: '0.25' })),
        )
        assert.equal(new Set(results.map((r) => r.transactionId)).size, 1)
        assert.equal(results.filter((r) => !r.replayed).length, 1)
        assert.deepEqual(await balanceOf(suite.ctx, alice!), { total: '0.25', available: '0.25' })
        const count = await sql<{ n: string }>`select count(*)::text as n from ledger_transactions where reference = ${reference}`.execute(suite.ctx.database.db)
        assert.equal(count.rows[0]!.n, '1')
      } finally {
        await close()
      }
    })
  })
}
