/**
 * Card deposits while the server is killed with SIGKILL (src/flows/card-deposit.flow.ts): a real `tessera serve`
 * on its own database takes a stream of card deposits from the sandbox's test cards (frictionless, a 3-D Secure
 * challenge passed or failed, a capture refused, a decline), the test answering the challenges on the issuer's page
 * as a cardholder would; it is killed several times in the middle and restarted; every commit is retried under its
 * key. In the end each deposit ends as its card says, its payment made and captured at most once, its account
 * credited exactly when the money was captured, and the books balance.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { openAccount, verifiedUser, type Transaction } from './money.ts'
import { Crash, linkExternalAccount, POSTGRES_ONLY, REQUEST_TIMEOUT_MS, sleep, type Commit } from './crash.ts'

/** Parallel streams of quote-then-commit against the server, spread over the users. */
const DEPOSITORS = 32
const USERS = 16
/** Kill-and-restart rounds: at least this many, and more (up to the most) until every hard case was hit by a kill. */
const ROUNDS_AT_LEAST = 3
const ROUNDS_AT_MOST = 6
/** The server is killed once this many commits of the round were answered 201 … */
const ANSWERED_BEFORE_KILL = 40
/** … and this many challenges wait for their cardholder. */
const WAITING_BEFORE_KILL = 5
/** How often a flow waiting for a challenge looks again (the answer also wakes it, in the process that took it). */
const CHALLENGE_POLL_MS = 100
/** The cardholder answers a challenge this long (at random between the two) after the page is first seen. */
const ANSWER_DELAY_MS = [100, 1_500] as const
const RETURN_URL = 'https://shop.example/paid'
const EXPIRY = { month: 12, year: new Date().getUTCFullYear() + 3 }

/** Sandbox test cards (docs/sandbox.md, "Card payments"). */
const CARD = {
  frictionless: '4242424242424242',
  challenge: '4000000000003220',
  captureDeclined: '4000000000000283',
  insufficientFunds: '4000000000000259',
}
type Card = keyof typeof CARD
/** What a deposit does: its card, and for a challenge the cardholder's answer. */
type Kind = 'frictionless' | 'challengePass' | 'challengeFail' | 'captureDeclined' | 'insufficientFunds'
const KINDS: Record<Kind, { card: Card; answer?: 'pass' | 'fail'; status: 'completed' | 'failed'; reason?: string }> = {
  frictionless: { card: 'frictionless', status: 'completed' },
  challengePass: { card: 'challenge', answer: 'pass', status: 'completed' },
  challengeFail: { card: 'challenge', answer: 'fail', status: 'failed', reason: 'card-unauthorized' },
  captureDeclined: { card: 'captureDeclined', status: 'failed', reason: 'card-declined-by-bank' },
  insufficientFunds: { card: 'insufficientFunds', status: 'failed', reason: 'insufficient-funds' },
}
/** The stream's mix, slot by slot. */
const MIX: Kind[] = ['frictionless', 'frictionless', 'frictionless', 'challengePass', 'challengePass', 'challengeFail', 'captureDeclined', 'insufficientFunds']

interface Depositor {
  userId: string
  eur: string
  /** The user's linked cards, one per test card. */
  cards: Record<Card, string>
}

/** One commit of the stream: its quote and key, what it does, and what the first request got. */
interface Attempt extends Commit<Depositor> {
  round: number
  kind: Kind
}

/** Where the card deposits still running stand (flow step and the issuer's payment), at a kill. */
interface Standing {
  /** Committed, the issuer not asked yet (the request between its commit and the authorize call). */
  committedNotAuthorized: number
  /** Asked, and the issuer recorded the payment, but the authorize step did not commit. */
  authorizedNotRecorded: number
  /** A challenge waiting for its cardholder. */
  challengeWaiting: number
  /** The challenge answered (or frictionless), the flow not past the authenticate step yet. */
  answeredNotSeen: number
  /** Authenticated, not captured yet. */
  toCapture: number
  /** Captured at the issuer, the capture step not committed. */
  capturedNotRecorded: number
  /** The capture refused by the issuer, the flow's failure not committed. */
  refusedNotRecorded: number
  /** Captured and recorded, not credited yet. */
  toSettle: number
}

const CONFIRMATION = (transaction: Transaction) => (transaction.origin.node as { confirmationUrl?: string }).confirmationUrl

describe('card deposits while the server is killed with SIGKILL [postgres]', POSTGRES_ONLY, () => {
  // The in-process app prepares the users, their accounts and their linked cards.
  const crash = new Crash<Depositor, Attempt>({
    name: 'card-deposits-crash',
    env: {
      // A challenge answered while its wake-up was lost to a kill is seen soon all the same.
      CARD_CHALLENGE_POLL_MS: String(CHALLENGE_POLL_MS),
      CARDS_MAX_LINKED: '10',
    },
    config: { CARDS_MAX_LINKED: '10' },
    type: 'deposit',
    commitBody: (quote) => ({ quoteId: quote.id, params: { requirements: [{ name: 'authorize:3ds', returnUrl: RETURN_URL }] } }),
    prepare: async ({ ctx, token }) => {
      const link = (userId: string, number: string) =>
        linkExternalAccount(ctx, token, userId, { type: 'card', label: `Card ${number.slice(-4)}`, number, securityCode: '123', expiryDate: EXPIRY })
      const depositors: Depositor[] = []
      for (let i = 0; i < USERS; i++) {
        const userId = await verifiedUser(ctx, token)
        const eur = await openAccount(ctx, token, userId, 'EUR')
        const cards = {} as Record<Card, string>
        for (const card of Object.keys(CARD) as Card[]) cards[card] = await link(userId, CARD[card])
        depositors.push({ userId, eur, cards })
      }
      return depositors
    },
  })

  /** Where the running card deposit flows stand, by their step and their payment at the issuer. */
  async function standing(): Promise<Standing> {
    const rows = await crash.query<{ step: number; payment: string | null; captured: boolean | null }>(`
      select f.step, p.status as payment, p.operations @> '[{"kind": "capture"}]'::jsonb as captured
      from flows f left join sandbox_card_payments p on p.organization_id = f.organization_id and p.reference = f.id::text
      where f.type = 'card-deposit' and f.status = 'running'`)
    const count = (check: (row: (typeof rows)[number]) => boolean) => rows.filter(check).length
    return {
      committedNotAuthorized: count((row) => row.step === 0 && row.payment === null),
      authorizedNotRecorded: count((row) => row.step === 0 && row.payment !== null),
      challengeWaiting: count((row) => row.step === 1 && row.payment === 'challenge'),
      answeredNotSeen: count((row) => row.step === 1 && row.payment !== 'challenge'),
      toCapture: count((row) => row.step === 2 && row.payment === 'authorized'),
      capturedNotRecorded: count((row) => row.step === 2 && row.payment === 'captured'),
      refusedNotRecorded: count((row) => row.step === 2 && row.payment !== 'authorized' && row.payment !== 'captured'),
      toSettle: count((row) => row.step === 3),
    }
  }

  test('every card deposit ends as its card says, paid and captured at most once, credited exactly when captured, whatever the kill interrupted; the books balance', async (t) => {
    const started = Date.now()
    const standings: Standing[] = []
    /** Makes every amount different (easier to follow in the books). */
    let counter = 0

    // The cardholders: one task per challenged deposit, which looks for the issuer's page on the transaction (after
    // restarts too), waits a moment as a person would, and answers it; anything the kills interrupt is tried again.
    const cardholders = new Map<string, Promise<void>>()
    const answered = new Map<string, { answer: 'pass' | 'fail'; tries: number }>()
    /** Answers of the issuer's page other than a 303 to the return URL. */
    const wrongAnswers: string[] = []
    let answering = true
    const answerChallenge = (depositor: Depositor, id: string, answer: 'pass' | 'fail', known: string | undefined) => {
      if (cardholders.has(id)) return
      const delay = ANSWER_DELAY_MS[0] + Math.random() * (ANSWER_DELAY_MS[1] - ANSWER_DELAY_MS[0])
      cardholders.set(id, (async () => {
        let confirmationUrl = known
        let seenAt: number | undefined
        let tries = 0
        while (answering) {
          try {
            if (confirmationUrl === undefined) {
              const response = await crash.send('GET', depositor, `/core/transactions/${id}`)
              if (response.status === 200) {
                const transaction = (JSON.parse(response.body) as { transaction: Transaction }).transaction
                // Ended before its cardholder answered: the checks below say it was not as it should.
                if (transaction.status !== 'processing') return
                confirmationUrl = CONFIRMATION(transaction)
              }
            }
            if (confirmationUrl !== undefined) {
              seenAt ??= Date.now()
              if (Date.now() - seenAt >= delay) {
                tries++
                const response = await fetch(confirmationUrl, {
                  method: 'POST',
                  headers: { 'content-type': 'application/x-www-form-urlencoded' },
                  body: `answer=${answer}`,
                  redirect: 'manual',
                  signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
                })
                await response.arrayBuffer()
                if (response.status !== 303 || response.headers.get('location') !== RETURN_URL) wrongAnswers.push(`${id}: ${response.status} to ${response.headers.get('location')}`)
                answered.set(id, { answer, tries })
                return
              }
            }
          } catch {
            // The server is frozen, dead or starting: the cardholder tries again.
          }
          await sleep(50)
        }
      })())
    }
    const follow = (attempt: Attempt, transaction: Transaction) => {
      const { answer } = KINDS[attempt.kind]
      if (answer) answerChallenge(attempt.user, transaction.id, answer, CONFIRMATION(transaction))
    }

    await crash.start()

    // The hard cases a kill should hit, in some round at least.
    const hit = () => ({
      /** A commit made whose answer the kill lost. */
      answerLost: crash.madeBeforeKill > 0,
      /** A request between its commit and its call to the issuer. */
      committedNotAuthorized: standings.some((s) => s.committedNotAuthorized > 0),
      /** A request between the issuer's answer and the commit of the authorize step. */
      authorizedNotRecorded: standings.some((s) => s.authorizedNotRecorded > 0),
      /** A flow between the capture (or its refusal) and the commit of its step. */
      capturedNotRecorded: standings.some((s) => s.capturedNotRecorded > 0),
    })

    // A round: the stream runs, the server is killed in its middle (challenges waiting) and restarted, every
    // commit of the round is retried. At least ROUNDS_AT_LEAST rounds, and more (ROUNDS_AT_MOST at most) until
    // the kills hit every hard case.
    await crash.run({
      streams: DEPOSITORS,
      more: () => crash.rounds < ROUNDS_AT_LEAST || (crash.rounds < ROUNDS_AT_MOST && !Object.values(hit()).every(Boolean)),
      next: (depositor, n, i) => {
        const kind = MIX[(n + i) % MIX.length]!
        const amount = new BigNumber(++counter).div(100).plus(10).toFixed()
        return {
          quote: {
            origin: { type: 'external-account', id: depositor.cards[KINDS[kind].card] },
            destination: { type: 'account', id: depositor.eur },
            denomination: { asset: 'EUR', amount },
            ttl: 300_000,
          },
          with: { round: crash.rounds, kind },
        }
      },
      committed: follow,
      answeredBeforeKill: ANSWERED_BEFORE_KILL,
      ready: async () => (await standing()).challengeWaiting >= WAITING_BEFORE_KILL,
      waitingFor: `${ANSWERED_BEFORE_KILL} answered commits and ${WAITING_BEFORE_KILL} challenges waiting`,
      atKill: async () => {
        const statuses = await crash.statuses()
        const stood = await standing()
        standings.push(stood)
        return { statuses, stood }
      },
      landed: ({ stood }) => assert.ok(stood.challengeWaiting > 0, `the kill landed while challenges waited: ${JSON.stringify(stood)}`),
      check: (attempt, transaction) => {
        assert.equal(transaction.type, 'deposit')
        assert.deepEqual([transaction.origin.asset, transaction.origin.amount, transaction.destination, transaction.fees], [attempt.quote.origin.asset, attempt.quote.origin.amount, attempt.quote.destination, attempt.quote.fees], attempt.key)
        assert.equal((transaction.origin.node as { id: string }).id, attempt.user.cards[KINDS[attempt.kind].card])
      },
      report: ({ number, round, unanswered, replayed, atKill: { statuses, stood }, started: roundStarted }) =>
        t.diagnostic(
          `round ${number}: ${round.length} commits sent, ${unanswered.length} unanswered at the kill (${replayed} of them made before it, ` +
            `${unanswered.length - replayed} by their retry); deposits at the kill ${JSON.stringify(statuses)}; the running flows at the kill ${JSON.stringify(stood)}; ` +
            `${((Date.now() - roundStarted) / 1000).toFixed(1)} s`,
        ),
    })
    const hardCases = hit()
    assert.deepEqual(hardCases, { answerLost: true, committedNotAuthorized: true, authorizedNotRecorded: true, capturedNotRecorded: true }, 'the kills hit every hard case')

    await crash.replayAll()

    // Deposits whose request died before the authorize call wait for their job (10 s after their creation).
    await crash.drain('every deposit to finish')
    answering = false
    await Promise.all(cardholders.values())
    const drained = Date.now()
    assert.deepEqual(wrongAnswers, [], 'the issuer\'s page answers every answer with a 303 to the return URL')

    // One transaction per key and per quote, and none besides.
    const { attempts, ids } = crash
    const rows = await crash.query<{ id: string; quote_id: string; status: string; reason: string | null; destination_account_id: string; origin_amount: string; destination_amount: string }>(
      "select id::text as id, quote_id::text as quote_id, status, reason, destination_account_id::text as destination_account_id, origin_amount, destination_amount from transactions where type = 'deposit'",
    )
    const byId = crash.onePerKey(rows, 'deposit')
    const kindOf = new Map(attempts.map((attempt) => [ids.get(attempt.key)!, attempt.kind]))
    for (const attempt of attempts) {
      const id = ids.get(attempt.key)!
      const row = byId.get(id)!
      assert.equal(row.destination_account_id, attempt.user.eur)
      // Each ends as its card (and its cardholder) says: a crash never fails a deposit for a reason of its own.
      const kind = KINDS[attempt.kind]
      assert.deepEqual([row.status, row.reason], [kind.status, kind.reason ?? null], `the end of ${id} (${attempt.kind})`)
      if (kind.answer) assert.equal(answered.get(id)?.answer, kind.answer, `the challenge of ${id} was answered`)
    }
    assert.equal(answered.size, attempts.filter((attempt) => KINDS[attempt.kind].answer).length, 'every challenge was answered, once each')

    await crash.announcedOnce(rows)

    // The issuer's books: one payment per deposit (every deposit's flow asks the issuer first), under the
    // deposit's key, for its amount, from its card; captured at most once, and exactly for the completed ones.
    const payments = await crash.query<{ key: string; reference: string; status: string; reason: string | null; amount: string; last_four: string; return_url: string; captures: number; voids: number }>(`
      select key, reference, status, reason, amount, last_four, return_url,
        jsonb_array_length(jsonb_path_query_array(operations, '$[*] ? (@.kind == "capture")')) as captures,
        jsonb_array_length(jsonb_path_query_array(operations, '$[*] ? (@.kind == "void")')) as voids
      from sandbox_card_payments`)
    const paymentsOf = Map.groupBy(payments, (payment) => payment.reference)
    assert.deepEqual([...paymentsOf.keys()].filter((reference) => !byId.has(reference)), [], 'no payment for anything but the deposits')
    const credits = await crash.query<{ reference: string; n: string }>("select reference, count(*) as n from ledger_transactions where reference like '%:settle' group by reference")
    const creditsOf = new Map(credits.map((credit) => [credit.reference, Number(credit.n)]))
    for (const row of rows) {
      const kind = KINDS[kindOf.get(row.id)!]
      const mine = paymentsOf.get(row.id) ?? []
      assert.ok(mine.length <= 1, `at most one payment for ${row.id}: ${mine.length}`)
      assert.equal(mine.length, 1, `the issuer was asked for ${row.id}`)
      const payment = mine[0]!
      assert.equal(payment.key, `${row.id}:authorize`)
      assert.ok(new BigNumber(payment.amount).isEqualTo(row.origin_amount), `the amount of ${payment.key}`)
      assert.equal(payment.last_four, CARD[kind.card].slice(-4))
      assert.equal(payment.return_url, RETURN_URL)
      assert.ok(payment.captures <= 1, `${payment.key} captured ${payment.captures} times`)
      const captured = payment.captures === 1
      assert.equal(captured, payment.status === 'captured', `${payment.key} is ${payment.status} with ${payment.captures} captures`)
      const credited = creditsOf.get(`${row.id}:settle`) ?? 0
      assert.ok(credited <= 1, `${row.id} credited ${credited} times`)
      assert.equal(credited === 1, captured, `${row.id} credited ${credited} times, its payment ${payment.status}`)
      assert.equal(captured, row.status === 'completed', `${row.id} is ${row.status}, its payment ${payment.status}`)
      // A failed deposit's payment holds nothing on the card: declined (by the issuer or its cardholder) or voided.
      if (row.status === 'failed') assert.ok(payment.status === 'declined' || payment.status === 'voided', `${payment.key} is ${payment.status}, its deposit failed`)
      if (payment.status === 'declined') assert.equal(payment.reason, row.reason, payment.key)
    }
    const paymentStatuses = Object.fromEntries(Object.entries(Object.groupBy(payments, (payment) => payment.status)).map(([status, group]) => [status, group!.length]))


    // Every flow finished; nothing is left to run or posted twice.
    const flows = await crash.query<{ status: string; n: string }>("select status, count(*) as n from flows where type = 'card-deposit' group by status")
    const ended = await crash.statuses()
    assert.deepEqual(Object.fromEntries(flows.map((row) => [row.status, Number(row.n)])), ended, 'every card deposit flow ended as its deposit')
    await crash.nothingLeft()

    // Each account holds what its completed deposits brought.
    for (const depositor of crash.users) {
      const received = rows.filter((row) => row.destination_account_id === depositor.eur && row.status === 'completed').reduce((sum, row) => sum.plus(row.destination_amount), new BigNumber(0))
      assert.deepEqual(await crash.balance(depositor, depositor.eur), { total: received.toFixed(), available: received.toFixed() }, `balance of ${depositor.eur}`)
    }

    // Outcomes, per kind and per round.
    const outcome = (attempt: Attempt) => {
      const row = byId.get(ids.get(attempt.key)!)!
      return row.reason ? `${row.status} ${row.reason}` : row.status
    }
    const tally = (group: readonly Attempt[]) =>
      Object.fromEntries(Object.entries(Object.groupBy(group, (attempt) => attempt.kind)).map(([kind, of]) => [kind, Object.fromEntries(Object.entries(Object.groupBy(of!, outcome)).map(([end, n]) => [end, n!.length]))]))
    for (const [round, group] of Map.groupBy(attempts, (attempt) => attempt.round)) t.diagnostic(`round ${round} outcomes: ${JSON.stringify(tally(group))}`)
    const retriedAnswers = [...answered.values()].filter((state) => state.tries > 1).length
    t.diagnostic(
      `${attempts.length} card deposits committed over ${crash.rounds} rounds (${crash.madeBeforeKill} made before a kill that lost their answer): ${JSON.stringify(ended)}; ` +
        `outcomes ${JSON.stringify(tally(attempts))}; payments ${JSON.stringify(paymentStatuses)}; ${answered.size} challenges answered ` +
        `(${retriedAnswers} of them after a try a kill interrupted); ` +
        `${((drained - started) / 1000).toFixed(1)} s to the end of the drain`,
    )

    await crash.finish()
  })
})
