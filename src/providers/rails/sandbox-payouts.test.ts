import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { bech32 } from '@scure/base'
import { isValidIBAN } from 'ibantools'
import { sql } from 'kysely'
import { ENGINES, openTestDatabase, testConfig } from '../../../test/helpers.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../db/database.ts'
import { isValidRoutingNumber, isValidUkAccount } from '../../lib/bank-numbers.ts'
import { validateAddress } from '../../modules/reference/addresses.ts'
import { RailUnavailableError, type RailCounterparty, type RailOrder, type RailOutcome, type RailReceipt } from './payouts.ts'
import { receivedOrders, SANDBOX_RAIL_TEST_VALUES, SandboxPaymentRail, type SandboxRailTestOutcome } from './sandbox-payouts.ts'

const SETTLE_AFTER_MS = 60_000

// The numbers docs/sandbox.md gives testers to paste, by the last four digits that select the outcome.
const ACH_ROUTING_NUMBER = '121000248'
const UK_SORT_CODE = '089999'
const BANK_TEST_ACCOUNTS: Record<string, { iban: { FR: string; DE: string }; ukAccountNumber: string; achAccountNumber: string }> = {
  '0001': { iban: { FR: 'FR7630006000011234500630001', DE: 'DE67370400440532010001' }, ukAccountNumber: '12440001', achAccountNumber: '9876540001' },
  '0002': { iban: { FR: 'FR7630006000011234500090002', DE: 'DE40370400440532010002' }, ukAccountNumber: '12410002', achAccountNumber: '9876540002' },
  '0003': { iban: { FR: 'FR7630006000011234500520003', DE: 'DE13370400440532010003' }, ukAccountNumber: '12370003', achAccountNumber: '9876540003' },
  '0004': { iban: { FR: 'FR7630006000011234500950004', DE: 'DE83370400440532010004' }, ukAccountNumber: '12340004', achAccountNumber: '9876540004' },
  '0005': { iban: { FR: 'FR7630006000011234500410005', DE: 'DE56370400440532010005' }, ukAccountNumber: '12420005', achAccountNumber: '9876540005' },
}
const COMPLETING_CARD = '4242424242424242'
const SCREENED_ETHEREUM_ADDRESS = '0x000000000000000000000000000000000000dEaD'
const FAILING_ETHEREUM_ADDRESS = '0x0000000000000000000000000000000000000bad'
const COMPLETING_ETHEREUM_ADDRESS = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const COMPLETING_BITCOIN_ADDRESS = 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'

function luhnValid(number: string): boolean {
  let sum = 0
  for (let i = 0; i < number.length; i++) {
    let digit = Number(number[number.length - 1 - i])
    if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2
    sum += digit
  }
  return sum % 10 === 0
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex')

function bankAccounts(lastFour: string): RailCounterparty[] {
  const numbers = BANK_TEST_ACCOUNTS[lastFour]!
  return [
    { kind: 'bank', network: 'ach', routingNumber: ACH_ROUTING_NUMBER, accountNumber: numbers.achAccountNumber, accountType: 'checking' },
    { kind: 'bank', network: 'fps', sortCode: UK_SORT_CODE, accountNumber: numbers.ukAccountNumber },
    { kind: 'bank', network: 'sepa', iban: numbers.iban.FR, bic: 'SOGEFRPP' },
    { kind: 'bank', network: 'sepa', iban: numbers.iban.DE, bic: 'COBADEFFXXX' },
  ]
}

const card = (number: string): RailCounterparty => ({ kind: 'card', network: 'visa', number, expiryDate: { month: 12, year: 2030 } })
const crypto = (network: string, address: string): RailCounterparty => ({ kind: 'crypto', network, address })

for (const engine of ENGINES) {
  describe(`sandbox payment rail [${engine}]`, () => {
    let database: DatabaseHandle
    let cleanup: () => Promise<void>
    let clock: Date
    let rail: SandboxPaymentRail
    const organizationId = randomUUID()

    before(async () => {
      ;({ database, cleanup } = await openTestDatabase(engine, testConfig()))
      clock = new Date()
      rail = new SandboxPaymentRail({ db: database.db, settleAfterMs: SETTLE_AFTER_MS, now: () => clock })
    })
    after(async () => {
      await database.close()
      await cleanup()
    })

    const later = (ms: number) => {
      clock = new Date(clock.getTime() + ms)
    }

    function order(counterparty: RailCounterparty, overrides: Partial<RailOrder> = {}): RailOrder {
      const asset = counterparty.kind === 'crypto' ? (counterparty.network === 'bitcoin' ? 'BTC' : 'ETH') : 'EUR'
      return { key: `withdrawal:${randomUUID()}:send`, organizationId, direction: 'payout', asset, amount: '100.5', counterparty, reference: randomUUID(), ...overrides }
    }

    /** Submits one order and follows it to settlement: its receipt, its outcome before and after. */
    async function settle(sent: RailOrder) {
      const [receipt] = await rail.submit([sent])
      assert.ok(receipt)
      const [held] = (await receivedOrders(database.db, organizationId)).filter((row) => row.key === sent.key)
      assert.ok(held)
      const atOnce = (await rail.outcomes([held.orderId])).get(held.orderId)
      later(SETTLE_AFTER_MS)
      const settled = (await rail.outcomes([held.orderId])).get(held.orderId)
      return { receipt, held, atOnce, settled }
    }

    /** What the test value says an order becomes, seen through the rail's interface. */
    async function assertSelects(sent: RailOrder, expected: SandboxRailTestOutcome | undefined, completedReference?: string) {
      const { receipt, held, atOnce, settled } = await settle(sent)
      const label = JSON.stringify(sent.counterparty)
      if (expected?.status === 'rejected') {
        assert.deepEqual(receipt, { key: sent.key, status: 'rejected', reason: expected.reason }, label)
        assert.deepEqual(atOnce, { status: 'failed', reason: expected.reason }, `a refusal is final at once: ${label}`)
        assert.deepEqual(settled, atOnce)
        return
      }
      assert.deepEqual(receipt, { key: sent.key, status: 'accepted', orderId: held.orderId }, label)
      assert.equal(atOnce?.status, 'pending', label)
      if (expected === undefined) assert.deepEqual(settled, { status: 'completed', networkReference: completedReference }, label)
      else assert.deepEqual(settled, { status: 'failed', reason: expected.reason }, label)
    }

    describe('bank test values, by the last four digits of the account number or IBAN', () => {
      test('the numbers given to testers are valid on their networks', () => {
        assert.ok(isValidRoutingNumber(ACH_ROUTING_NUMBER))
        for (const [lastFour, numbers] of Object.entries(BANK_TEST_ACCOUNTS)) {
          for (const iban of Object.values(numbers.iban)) {
            assert.ok(isValidIBAN(iban), iban)
            assert.ok(iban.endsWith(lastFour), iban)
          }
          assert.ok(isValidUkAccount(UK_SORT_CODE, numbers.ukAccountNumber), numbers.ukAccountNumber)
          assert.ok(numbers.ukAccountNumber.endsWith(lastFour) && numbers.achAccountNumber.endsWith(lastFour))
        }
        assert.deepEqual(Object.keys(SANDBOX_RAIL_TEST_VALUES.bank.byLastFourDigits).sort(), ['0002', '0003', '0004', '0005'])
      })

      for (const lastFour of Object.keys(BANK_TEST_ACCOUNTS)) {
        const expected = SANDBOX_RAIL_TEST_VALUES.bank.byLastFourDigits[lastFour]
        test(`…${lastFour}: ${expected ? `${expected.status} ${expected.reason}` : 'completed'}, on ACH, FPS and SEPA, paid out or collected`, async () => {
          for (const counterparty of bankAccounts(lastFour)) {
            for (const direction of ['payout', 'collection'] as const) {
              const sent = order(counterparty, { direction })
              await assertSelects(sent, expected, `SBX${sha256Hex(sent.key).slice(0, 12).toUpperCase()}`)
            }
          }
        })
      }

      test('an IBAN written on paper (spaces, lower case) selects the same outcome', async () => {
        const iban = BANK_TEST_ACCOUNTS['0003']!.iban.FR.toLowerCase().replace(/(.{4})/g, '$1 ')
        await assertSelects(order({ kind: 'bank', network: 'sepa', iban, bic: 'SOGEFRPP' }), { status: 'rejected', reason: 'beneficiary-country-restricted' })
      })

      test('above 50000 is refused, before the account number is looked at; 50000 itself is taken', async () => {
        const [completing, failing] = [bankAccounts('0001')[1]!, bankAccounts('0004')[2]!]
        await assertSelects(order(completing, { amount: '50000.01' }), { status: 'rejected', reason: 'provider-maximum-limit-exceeded' })
        await assertSelects(order(failing, { amount: '70000' }), { status: 'rejected', reason: 'provider-maximum-limit-exceeded' })
        const atLimit = order(completing, { amount: '50000.00' })
        await assertSelects(atLimit, undefined, `SBX${sha256Hex(atLimit.key).slice(0, 12).toUpperCase()}`)
      })
    })

    describe('card test values, by the whole card number', () => {
      test('every test number passes the Luhn check', () => {
        for (const number of [...Object.keys(SANDBOX_RAIL_TEST_VALUES.card.byNumber), COMPLETING_CARD]) assert.ok(luhnValid(number), number)
      })

      test('each number selects its outcome; any other completes with a six-digit approval code', async () => {
        for (const [number, expected] of Object.entries(SANDBOX_RAIL_TEST_VALUES.card.byNumber)) await assertSelects(order(card(number)), expected)
        const completing = order(card(COMPLETING_CARD))
        const code = (BigInt(`0x${sha256Hex(completing.key)}`) % 1_000_000n).toString().padStart(6, '0')
        assert.match(code, /^[0-9]{6}$/)
        await assertSelects(completing, undefined, code)
      })

      test('above 5000 is refused, before the number is looked at', async () => {
        await assertSelects(order(card(COMPLETING_CARD), { amount: '5000.0001' }), { status: 'rejected', reason: 'provider-maximum-limit-exceeded' })
        await assertSelects(order(card('4000000000000127'), { amount: '9000' }), { status: 'rejected', reason: 'provider-maximum-limit-exceeded' })
      })

      test('a card number is never stored: no column of any row holds one', async () => {
        const numbers = [...Object.keys(SANDBOX_RAIL_TEST_VALUES.card.byNumber), COMPLETING_CARD]
        const sent = numbers.map((number) => order(card(number)))
        await rail.submit(sent)
        await rail.submit(sent)
        // Each row as PostgreSQL prints it: every column, including any the application does not know of.
        const rows = await sql<{ row: string }>`select r::text as row from sandbox_rail_orders r`.execute(database.db)
        assert.ok(rows.rows.length >= numbers.length)
        for (const { row } of rows.rows) {
          for (const number of numbers) assert.ok(!row.includes(number) && !row.includes(number.slice(0, 12)), `a row holds a card number: ${row}`)
        }
        const stored = await database.db.selectFrom('sandbox_rail_orders').select(['key', 'counterparty']).where('kind', '=', 'card').execute()
        const byKey = new Map(stored.map((row) => [row.key, row.counterparty]))
        for (const [i, number] of numbers.entries()) {
          assert.deepEqual(byKey.get(sent[i]!.key), { kind: 'card', network: 'visa', last4Digits: number.slice(-4), expiryDate: { month: 12, year: 2030 } })
        }
      })
    })

    describe('crypto test values, by address', () => {
      const [screened, failing] = Object.keys(SANDBOX_RAIL_TEST_VALUES.crypto.bitcoin.byAddress)

      test('the bitcoin test addresses are the testnet P2WPKH addresses of fixed hashes, valid for Tessera', () => {
        assert.equal(screened, bech32.encode('tb', [0, ...bech32.toWords(new Uint8Array(20).fill(0x00))]))
        assert.equal(failing, bech32.encode('tb', [0, ...bech32.toWords(new Uint8Array(20).fill(0x01))]))
        for (const address of [screened!, failing!, COMPLETING_BITCOIN_ADDRESS]) assert.deepEqual(validateAddress('bitcoin', 'test', address), { isValid: true }, address)
      })

      test('bitcoin: the first is refused at screening, the second fails, in any case; others complete with a plain hash', async () => {
        await assertSelects(order(crypto('bitcoin', screened!)), { status: 'rejected', reason: 'screening-verification-failed' })
        await assertSelects(order(crypto('bitcoin', failing!.toUpperCase())), { status: 'failed', reason: 'unspecified-error' })
        const completing = order(crypto('bitcoin', COMPLETING_BITCOIN_ADDRESS))
        await assertSelects(completing, undefined, sha256Hex(completing.key))
      })

      test('ethereum: …dead is refused at screening, …0bad fails, in any case; others complete with a 0x hash', async () => {
        for (const pasted of [SCREENED_ETHEREUM_ADDRESS, FAILING_ETHEREUM_ADDRESS, COMPLETING_ETHEREUM_ADDRESS]) {
          assert.deepEqual(validateAddress('ethereum', 'test', pasted), { isValid: true }, pasted)
        }
        await assertSelects(order(crypto('ethereum', SCREENED_ETHEREUM_ADDRESS)), { status: 'rejected', reason: 'screening-verification-failed' })
        await assertSelects(order(crypto('ethereum', FAILING_ETHEREUM_ADDRESS)), { status: 'failed', reason: 'unspecified-error' })
        const address = (suffix: string) => `0x5aAeb6053F3E94C9b9A09f33669435E7Ef1B${suffix}`
        for (const suffix of ['dead', 'DEAD', 'dEaD']) await assertSelects(order(crypto('ethereum', address(suffix))), { status: 'rejected', reason: 'screening-verification-failed' })
        for (const suffix of ['0bad', '0BAD']) await assertSelects(order(crypto('ethereum', address(suffix))), { status: 'failed', reason: 'unspecified-error' })
        const completing = order(crypto('ethereum', COMPLETING_ETHEREUM_ADDRESS))
        await assertSelects(completing, undefined, `0x${sha256Hex(completing.key)}`)
        assert.match(`0x${sha256Hex(completing.key)}`, /^0x[0-9a-f]{64}$/)
      })

      test('the values of one network select nothing on another', async () => {
        const onSolana = order(crypto('solana', `So1ana${screened}dead`))
        await assertSelects(onSolana, undefined, sha256Hex(onSolana.key))
      })
    })

    describe('idempotency', () => {
      test('the same key again is the same order: same id, same outcome, counted; later contents are ignored', async () => {
        const first = order(bankAccounts('0002')[1]!)
        const [receipt] = await rail.submit([first])
        later(1_000)
        const [again] = await rail.submit([{ ...first, amount: '99999', counterparty: bankAccounts('0003')[1]! }])
        assert.deepEqual(again, receipt)
        assert.equal(receipt?.status, 'accepted')
        const orderId = receipt.status === 'accepted' ? receipt.orderId : ''
        const [held] = (await receivedOrders(database.db, organizationId)).filter((row) => row.key === first.key)
        assert.deepEqual(held, {
          key: first.key,
          orderId,
          status: 'failed',
          reason: 'bank-account-holder-name-mismatch',
          received: 2,
          amount: '100.5',
          asset: 'EUR',
          kind: 'bank',
          network: 'fps',
          direction: 'payout',
        })
        // Still due at the first submission's settlement time, not pushed back by the repeat.
        later(SETTLE_AFTER_MS - 1_000)
        assert.deepEqual((await rail.outcomes([orderId])).get(orderId), { status: 'failed', reason: 'bank-account-holder-name-mismatch' })
      })

      test('a refused key sent again is refused again with the same reason', async () => {
        const refused = order(card('4000000000000143'))
        const [first] = await rail.submit([refused])
        const [second] = await rail.submit([{ ...refused, counterparty: card(COMPLETING_CARD) }])
        assert.deepEqual(second, first)
        assert.deepEqual(first, { key: refused.key, status: 'rejected', reason: 'card-permanently-declined-by-bank' })
        assert.equal((await receivedOrders(database.db, organizationId)).find((row) => row.key === refused.key)?.received, 2)
      })

      test('a key twice in one batch is one order received twice; concurrent submissions of a key are one order', async () => {
        const sent = order(crypto('ethereum', COMPLETING_ETHEREUM_ADDRESS))
        const receipts = await rail.submit([sent, order(card(COMPLETING_CARD)), sent])
        assert.deepEqual(receipts[2], receipts[0])
        const racing = order(crypto('bitcoin', COMPLETING_BITCOIN_ADDRESS))
        const [a, b] = await Promise.all([rail.submit([racing]), rail.submit([racing])])
        assert.deepEqual(a, b)
        const held = await receivedOrders(database.db, organizationId)
        assert.equal(held.find((row) => row.key === sent.key)?.received, 2)
        assert.equal(held.find((row) => row.key === racing.key)?.received, 2)
      })
    })

    describe('settlement', () => {
      test('an accepted order is pending until its settlement time, then final', async () => {
        const sent = order(bankAccounts('0001')[0]!)
        const submittedAt = clock
        const [receipt] = await rail.submit([sent])
        assert.equal(receipt?.status, 'accepted')
        const orderId = receipt.status === 'accepted' ? receipt.orderId : ''
        const settlesAt = new Date(submittedAt.getTime() + SETTLE_AFTER_MS)
        const at = async (ms: number): Promise<RailOutcome | undefined> => {
          clock = new Date(submittedAt.getTime() + ms)
          return (await rail.outcomes([orderId])).get(orderId)
        }
        assert.deepEqual(await at(0), { status: 'pending', retryAt: settlesAt })
        assert.deepEqual(await at(SETTLE_AFTER_MS - 1), { status: 'pending', retryAt: settlesAt })
        const final = { status: 'completed', networkReference: `SBX${sha256Hex(sent.key).slice(0, 12).toUpperCase()}` }
        assert.deepEqual(await at(SETTLE_AFTER_MS), final)
        assert.deepEqual(await at(10 * SETTLE_AFTER_MS), final)
      })

      test('with no settlement delay an outcome is final at once', async () => {
        const immediate = new SandboxPaymentRail({ db: database.db, settleAfterMs: 0, now: () => clock })
        const [receipt] = await immediate.submit([order(card('4000000000000135'))])
        const orderId = receipt?.status === 'accepted' ? receipt.orderId : ''
        assert.deepEqual((await immediate.outcomes([orderId])).get(orderId), { status: 'failed', reason: 'card-expired' })
      })

      test('outcomes answer for each id asked, in one call; an id the rail does not know is an error', async () => {
        const receipts = await rail.submit([order(bankAccounts('0004')[3]!), order(card(COMPLETING_CARD))])
        const ids = receipts.map((receipt) => (receipt.status === 'accepted' ? receipt.orderId : ''))
        later(SETTLE_AFTER_MS)
        const outcomes = await rail.outcomes([ids[1]!, ids[0]!, ids[1]!.toUpperCase()])
        assert.deepEqual([...outcomes.keys()], [ids[1], ids[0], ids[1]!.toUpperCase()])
        assert.deepEqual(outcomes.get(ids[0]!), { status: 'failed', reason: 'unspecified-error' })
        assert.deepEqual(await rail.outcomes([]), new Map())
        await assert.rejects(rail.outcomes([ids[0]!, randomUUID()]), (error: Error) => !(error instanceof RailUnavailableError) && /has no order/.test(error.message))
        await assert.rejects(rail.outcomes(['not-an-order-id']), /has no order not-an-order-id/)
      })
    })

    test('receipts come in the order of the batch, refusals among acceptances', async () => {
      const batch = [
        order(card('4000000000000143')),
        order(bankAccounts('0001')[2]!),
        order(crypto('ethereum', `0x${'1'.repeat(36)}dead`)),
        order(bankAccounts('0003')[0]!),
        order(crypto('bitcoin', COMPLETING_BITCOIN_ADDRESS)),
        order(bankAccounts('0005')[1]!, { direction: 'collection', asset: 'GBP' }),
      ]
      const receipts = await rail.submit(batch)
      assert.deepEqual(receipts.map((receipt) => receipt.key), batch.map((sent) => sent.key))
      assert.deepEqual(receipts.map((receipt) => receipt.status), ['rejected', 'accepted', 'rejected', 'rejected', 'accepted', 'accepted'])
      assert.deepEqual(await rail.submit([]), [])
    })

    test('a batch larger than one statement can carry is recorded whole, in order', async () => {
      const batch = Array.from({ length: 2_500 }, (_, i) => order(i % 2 === 0 ? card(COMPLETING_CARD) : card('4000000000000143')))
      const receipts = await rail.submit(batch)
      assert.deepEqual(receipts.map((receipt) => [receipt.key, receipt.status]), batch.map((sent, i) => [sent.key, i % 2 === 0 ? 'accepted' : 'rejected']))
      const ids = receipts.flatMap((receipt) => (receipt.status === 'accepted' ? [receipt.orderId] : []))
      assert.equal(new Set(ids).size, 1_250)
      assert.equal((await rail.outcomes(ids)).size, 1_250)
    })

    test('the orders received are listed per organization', async () => {
      const otherOrganization = randomUUID()
      const sent = order(bankAccounts('0001')[3]!, { organizationId: otherOrganization, amount: '12.34', asset: 'EUR' })
      await rail.submit([sent])
      const listed = await receivedOrders(database.db, otherOrganization)
      assert.deepEqual(listed.map((row) => [row.key, row.amount, row.kind, row.network, row.status]), [[sent.key, '12.34', 'bank', 'sepa', 'completed']])
      assert.ok((await receivedOrders(database.db)).some((row) => row.key === sent.key))
      assert.ok(!(await receivedOrders(database.db, organizationId)).some((row) => row.key === sent.key))
    })

    test('an order that breaks the interface is a programming error, thrown before anything is recorded', async () => {
      const valid = order(card('4111111111111111'))
      const broken: unknown[] = [
        { ...valid, amount: '0' },
        { ...valid, amount: '-5' },
        { ...valid, amount: '1e3' },
        { ...valid, amount: '.5' },
        { ...valid, amount: 10 },
        { ...valid, key: '' },
        { ...valid, organizationId: 'org' },
        { ...valid, direction: 'refund' },
        { ...valid, direction: 'collection' },
        { ...valid, counterparty: { kind: 'cheque', network: 'post' } },
        { ...valid, counterparty: { kind: 'bank', network: 'wire', accountNumber: '1' } },
        { ...valid, counterparty: { kind: 'bank', network: 'sepa' } },
        { ...valid, counterparty: { ...card('4111 1111 1111 1111') } },
        { ...valid, counterparty: { ...card('4111111111111111'), expiryDate: { month: 13, year: 2030 } } },
        { ...valid, counterparty: { kind: 'crypto', network: 'ethereum', address: '' } },
      ]
      const fine = order(bankAccounts('0001')[0]!)
      for (const sent of broken) {
        await assert.rejects(
          rail.submit([fine, sent as RailOrder]),
          (error: Error) => !(error instanceof RailUnavailableError) && error.message.startsWith('Sandbox rail order') && !error.message.includes('4111'),
          JSON.stringify(sent),
        )
      }
      assert.ok(!(await receivedOrders(database.db)).some((row) => row.key === fine.key || row.key === valid.key))
      assert.throws(() => new SandboxPaymentRail({ db: database.db, settleAfterMs: -1 }), /settlement delay/)
    })
  })
}

/** Opens the embedded database in `dataDir` in a process of its own, submits `sent`, prints the receipts, and waits. */
const SUBMITTING_PROCESS = `
const [dataDir, sent] = process.argv.slice(1)
const { migrateToLatest, openDatabase } = await import(${JSON.stringify(new URL('../../db/database.ts', import.meta.url).href)})
const { SandboxPaymentRail } = await import(${JSON.stringify(new URL('./sandbox-payouts.ts', import.meta.url).href)})
const database = await openDatabase({ databaseUrl: null, databasePoolSize: 1, dataDir })
await migrateToLatest(database)
const receipts = await new SandboxPaymentRail({ db: database.db, settleAfterMs: 0 }).submit([JSON.parse(sent)])
process.stdout.write(JSON.stringify(receipts) + '\\n')
setInterval(() => {}, 60_000)
`

/** Runs the submitting process until it answered, then kills it with SIGKILL: no chance to close anything. */
async function submitAndKill(dataDir: string, sent: RailOrder): Promise<unknown> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', SUBMITTING_PROCESS, dataDir, JSON.stringify(sent)], { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)))
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const answered = await new Promise<string | undefined>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (stdout.endsWith('\n')) resolve(stdout)
    })
    void exited.then(() => resolve(undefined))
  })
  child.kill('SIGKILL')
  assert.equal(await exited, 'SIGKILL', `the submitting process ended by itself: ${stderr}`)
  assert.ok(answered, stderr)
  return JSON.parse(answered)
}

describe('sandbox payment rail durability [pglite]', () => {
  test('orders survive kill -9 of the process: the database opened again holds them, with their outcomes', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-sandbox-rail-'))
    try {
      const sent: RailOrder = {
        key: `withdrawal:${randomUUID()}:send`,
        organizationId: randomUUID(),
        direction: 'payout',
        asset: 'ETH',
        amount: '0.25',
        counterparty: crypto('ethereum', COMPLETING_ETHEREUM_ADDRESS),
        reference: randomUUID(),
      }
      const receipts = await submitAndKill(dataDir, sent)

      const reopened = await openDatabase({ databaseUrl: null, databasePoolSize: 1, dataDir })
      try {
        const rail = new SandboxPaymentRail({ db: reopened.db, settleAfterMs: 0 })
        assert.deepEqual(await rail.submit([sent]), receipts, 'the key is still the same order')
        const [receipt] = receipts as RailReceipt[]
        const orderId = receipt?.status === 'accepted' ? receipt.orderId : ''
        assert.deepEqual((await rail.outcomes([orderId])).get(orderId), { status: 'completed', networkReference: `0x${sha256Hex(sent.key)}` })
        assert.equal((await receivedOrders(reopened.db)).find((row) => row.key === sent.key)?.received, 2)
      } finally {
        await reopened.close()
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })

  test('a database the rail cannot reach makes it unavailable, which the caller retries', async () => {
    const database = await openDatabase({ databaseUrl: null, databasePoolSize: 1, dataDir: null })
    await migrateToLatest(database)
    const rail = new SandboxPaymentRail({ db: database.db, settleAfterMs: 0 })
    await database.close()
    const sent: RailOrder = {
      key: 'withdrawal:unreachable:send',
      organizationId: randomUUID(),
      direction: 'payout',
      asset: 'BTC',
      amount: '1',
      counterparty: crypto('bitcoin', COMPLETING_BITCOIN_ADDRESS),
      reference: 'unreachable',
    }
    await assert.rejects(rail.submit([sent]), RailUnavailableError)
    await assert.rejects(rail.outcomes([randomUUID()]), RailUnavailableError)
  })
})
