// Portfolio read benchmark: the latency of Tessera's portfolio reads (`_mget` performance of a user's accounts, an
// account's and a user's one-year historical balance) for a user with a short history and one with a long one, in
// the same database and the same run, as ratios large/small. Reads never replay movements, so the ratios should stay
// near 1 whatever the length of the history. See bench/README.md ("Portfolio reads").
import autocannon, { type Instance, type Options, type RequestParams, type Result } from 'autocannon'
import BigNumber from 'bignumber.js'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import {
  accessToken,
  backgroundCpuLoad,
  databaseVersion,
  expectJson,
  Interrupted,
  isCleaning,
  ledgerCheck,
  log,
  mapLimit,
  newClientCredentials,
  onCleanup,
  onInterrupt,
  percent,
  reportHeading,
  RESULTS_DIR,
  runMain,
  scratchDatabase,
  setLogPrefix,
  startCluster,
  startTessera,
  stopChild,
  verifiedUser,
  warnIfBusy,
  writeResults,
} from './harness.ts'
import { cpuMeter, type CpuMeter } from './cpu.ts'
import { insertRows } from './raw-sql.ts'
import { positiveInteger } from './settings.ts'
import { uuidv7 } from '../src/lib/ids.ts'

setLogPrefix('bench:portfolio')

/** The issue's target: latency with the long history at most this many times that with the short one. */
const TARGET_RATIO = 1.2
const DAY_MS = 86_400_000
const YEAR_MS = 365 * DAY_MS

const settings = {
  /** Accounts of each user (the `_mget` takes up to 100 ids). */
  accounts: positiveInteger('BENCH_PORTFOLIO_ACCOUNTS', 100),
  /** Transactions per account of the user with the short history. */
  small: positiveInteger('BENCH_PORTFOLIO_SMALL', 1000),
  /** Transactions per account of the user with the long history. */
  large: positiveInteger('BENCH_PORTFOLIO_LARGE', 100_000),
  connections: positiveInteger('BENCH_PORTFOLIO_CONNECTIONS', 4),
  /** Seconds of each measured run. */
  duration: positiveInteger('BENCH_PORTFOLIO_DURATION', 10),
  /** Seconds of the warm-up run of each scenario and user (discarded). */
  warmup: positiveInteger('BENCH_PORTFOLIO_WARMUP', 3),
  /** Measured runs of each scenario and user, interleaved small, large, small, large, … */
  rounds: positiveInteger('BENCH_PORTFOLIO_ROUNDS', 3),
  /** `0` leaves out the user's overall one-year historical balance (every account × 365 points per request). */
  overall: process.env.BENCH_PORTFOLIO_OVERALL !== '0',
  /** `0` skips `tessera ledger check` after the run (it reads every seeded entry: about 20 s at full size). */
  ledgerCheck: process.env.BENCH_PORTFOLIO_LEDGER_CHECK !== '0',
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
  cpuProfile: process.env.BENCH_CPU_PROF === '1',
  enforceTarget: process.env.BENCH_ENFORCE_TARGET === '1',
}
if (settings.accounts > 100) throw new Error(`BENCH_PORTFOLIO_ACCOUNTS must be at most 100, what one _mget takes (got ${settings.accounts})`)
if (settings.rounds < 2) throw new Error(`BENCH_PORTFOLIO_ROUNDS must be at least 2 (got ${settings.rounds})`)

type Cohort = 'small' | 'large'
const COHORTS: readonly Cohort[] = ['small', 'large']

interface User {
  cohort: Cohort
  userId: string
  acting: Record<string, string>
  headers: Record<string, string>
  accounts: { id: string; asset: string }[]
  /** Transactions per account. */
  moves: number
}

// ---------------------------------------------------------------------------------------------------------------
// Fixture: users and accounts through the API

/** Mostly BTC and ETH, every tenth account USD. */
const assetOf = (i: number) => (i % 10 === 9 ? 'USD' : i % 2 === 0 ? 'BTC' : 'ETH')

async function makeUser(baseUrl: string, token: string, cohort: Cohort, moves: number): Promise<User> {
  const user = await verifiedUser(baseUrl, token, `bench-portfolio-${cohort}-${Date.now()}@example.com`)
  const accounts = await mapLimit(Array.from({ length: settings.accounts }, (_, i) => i), 4, async (i) => {
    const created = await user.call('POST', '/core/accounts', user.headers, 201, { label: `Bench ${cohort} ${i}`, asset: assetOf(i) })
    return { id: (created.account as { id: string }).id, asset: assetOf(i) }
  })
  return { cohort, userId: user.userId, acting: user.acting, headers: user.headers, accounts, moves }
}

// ---------------------------------------------------------------------------------------------------------------
// Seeding: what a year of deposits and withdrawals leaves in the database, written with set-based statements

/** How each asset's accounts move money: the rail's network (and so its clearing account), the places of an amount, and the size of a movement (`base`). */
const RAILS: Record<string, { network: string; decimals: number; base: string }> = {
  BTC: { network: 'bitcoin', decimals: 8, base: '0.01' },
  // Amounts of ether to 8 places (it has 18): enough for these sizes.
  ETH: { network: 'ethereum', decimals: 8, base: '0.25' },
  USD: { network: 'wire', decimals: 2, base: '50' },
}
const WITHDRAWAL_ADDRESSES: Record<string, string> = { bitcoin: 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq', ethereum: '0xde0b295669a9fd93d5f28d9ec85e40f4cb697bae' }

const SEED_ACCOUNT_COLUMNS = [
  'idx', 'cohort', 'organization_id', 'account_id', 'owner_id', 'asset', 'network', 'clearing_id', 'unit', 'decimals', 'moves', 'phase', 't0_ms', 'step_ms',
  'deposit_origin', 'account_node', 'withdrawal_destination', 'counterparty',
] as const

/** ln 10: `retained` is stored as a mantissa in (0.1, 1] and its power of ten (src/modules/portfolio/cost-basis.ts). */
const LN10 = Math.log(10)

/**
 * The statements of the seed, by name. `bench_seed_moves` holds every movement of every account (both users, one
 * time line), with the position after it (quantity, cost basis, retained and its scale, epoch), ordered by time: each table is then
 * filled from it in time order, as real activity would have filled it.
 */
function seedStatements() {
  // An id shaped like a UUIDv7 (the movement's millisecond first), unique by what it is (`kind`), account and movement.
  const uuidFunction = `
    create function bench_seed_uuid(ms bigint, kind int, account int, k int) returns uuid language sql immutable as $$
      select encode(int8send((ms << 16) | 28672 | kind) || int8send((-9223372036854775808)::bigint | (account::bigint << 48) | k), 'hex')::uuid
    $$`
  // Odd movements are deposits of 1 to 3 units, even ones withdrawals of 0.4 to 0.9 unit (never more than the deposit
  // before them, so no balance goes below zero). A unit is the asset's base amount × 1000 / the account's movements:
  // both users end the year with holdings of the same order. A deposit costs its amount at the day's recorded price;
  // a withdrawal keeps the average price (cost basis and `retained` scaled by what it left). With l the log of what
  // each withdrawal left and L its running sum, retained = e^-L and the cost basis = e^-L × Σ cost × e^L (average-cost
  // method in closed form). `retained` is stored as its mantissa and power of ten; the epoch stays 0 (no account is
  // ever emptied).
  const moves = `
    create unlogged table bench_seed_moves as
    select idx, k, ms, at, amount, q, epoch, round(retained::numeric, 15) as retained, retained_scale, invested
    from (
      select v.idx, v.k, v.ms, v.at, v.amount, v.q,
        0 as epoch,
        power(10::float8, -v.l_sum / ${LN10} - (floor(-v.l_sum / ${LN10}) + 1)) as retained,
        (floor(-v.l_sum / ${LN10}) + 1)::int as retained_scale,
        trim_scale(round((sum(c.cost::float8 * exp(v.l_sum)) over w3 * exp(-v.l_sum))::numeric, 12)) as invested
      from (
        select u.*, sum(u.l) over w2 as l_sum
        from (
          select q1.*, case when q1.amount < 0 then ln(((q1.q - q1.amount) / q1.q)::float8) else 0::float8 end as l
          from (
            select b.*, sum(b.amount) over w1 as q
            from (
              select a.idx, s.k, t.ms, t.at,
                trim_scale(case when s.k % 2 = 1
                  then greatest(round(a.unit * (1 + 2 * ((s.k::bigint * 7919 + a.idx::bigint * 104729) % 1000) / 1000.0), a.decimals), power(10::numeric, -a.decimals))
                  else -greatest(round(a.unit * (0.4 + 0.5 * ((s.k::bigint * 6007 + a.idx::bigint * 15485863) % 1000) / 1000.0), a.decimals), power(10::numeric, -a.decimals))
                end) as amount,
                p.usd_mid
              from bench_seed_accounts a
              cross join lateral generate_series(1, a.moves) s(k)
              cross join lateral (select (a.t0_ms + (s.k - 1 + a.phase) * a.step_ms)::bigint as ms) t0
              cross join lateral (select t0.ms, 'epoch'::timestamptz + t0.ms * interval '1 millisecond' as at) t
              left join bench_seed_prices p on p.asset = a.asset and p.day = date_trunc('day', t.at)
            ) b
            window w1 as (partition by b.idx order by b.k)
          ) q1
        ) u
        window w2 as (partition by u.idx order by u.k)
      ) v
      cross join lateral (select case when v.amount > 0 then v.amount * coalesce(v.usd_mid, 0) else 0 end as cost) c
      window w3 as (partition by v.idx order by v.k)
    ) w
    order by at, idx`
  const from = 'from bench_seed_moves m join bench_seed_accounts a on a.idx = m.idx'
  // The tables every movement writes to, largest first (two connections take them in turn).
  const inserts = [
    {
      name: 'ledger_entries',
      sql: `
        insert into ledger_entries (organization_id, id, transaction_id, account_id, asset, amount, created_at)
        select a.organization_id, e.id, bench_seed_uuid(m.ms, 2, m.idx, m.k), e.account_id, a.asset, e.amount, m.at
        ${from} cross join lateral (values
          (bench_seed_uuid(m.ms, 3, m.idx, m.k), a.clearing_id, -m.amount),
          (bench_seed_uuid(m.ms, 4, m.idx, m.k), a.account_id, m.amount)) e(id, account_id, amount)`,
    },
    {
      name: 'transactions',
      sql: `
        insert into transactions (organization_id, id, owner_id, type, status, reason, origin, origin_asset, origin_amount, origin_rate, destination,
          destination_asset, destination_amount, destination_rate, denomination, fees, origin_account_id, destination_account_id, network, reference,
          counterparty, quote_id, quoted_at, created_at, updated_at, completed_at)
        select a.organization_id, t.id, a.owner_id, case when m.amount > 0 then 'deposit' else 'withdrawal' end, 'completed', null,
          case when m.amount > 0 then a.deposit_origin else a.account_node end, a.asset, abs(m.amount), '1',
          case when m.amount > 0 then a.account_node else a.withdrawal_destination end, a.asset, abs(m.amount), '1',
          jsonb_build_object('rate', '1', 'asset', a.asset, 'amount', abs(m.amount)::text, 'target', 'destination'), '[]'::jsonb,
          case when m.amount < 0 then a.account_id end, case when m.amount > 0 then a.account_id end, a.network,
          case when m.amount > 0 then a.network || ':' || t.id::text end, case when m.amount < 0 then a.counterparty end, null,
          m.at - interval '30 seconds', m.at - interval '30 seconds', m.at, m.at
        ${from} cross join lateral (select bench_seed_uuid(m.ms, 1, m.idx, m.k) as id) t`,
    },
    {
      name: 'ledger_transactions',
      sql: `
        insert into ledger_transactions (organization_id, id, type, reference, request_hash, hold_id, data, created_at)
        select a.organization_id, bench_seed_uuid(m.ms, 2, m.idx, m.k), case when m.amount > 0 then 'deposit' else 'withdrawal' end,
          case when m.amount > 0 then t.id::text else t.id::text || ':capture' end, md5(t.id::text) || md5(m.amount::text),
          case when m.amount < 0 then bench_seed_uuid(m.ms, 5, m.idx, m.k) end, jsonb_build_object('transactionId', t.id::text), m.at
        ${from} cross join lateral (select bench_seed_uuid(m.ms, 1, m.idx, m.k) as id) t`,
    },
    {
      name: 'portfolio_history',
      // One row per account and minute with activity: the position at the end of that minute, in time order.
      sql: `
        insert into portfolio_history (organization_id, account_id, minute_at, total, available, invested_usd, retained, retained_scale, epoch)
        select organization_id, account_id, minute_at, q, q, invested, retained, retained_scale, epoch
        from (
          select distinct on (m.idx, date_trunc('minute', m.at)) a.organization_id, a.account_id, m.idx, date_trunc('minute', m.at) as minute_at,
            m.q, m.invested, m.retained, m.retained_scale, m.epoch
          ${from}
          order by m.idx, date_trunc('minute', m.at), m.k desc
        ) h
        order by minute_at, idx`,
    },
    {
      name: 'ledger_holds',
      sql: `
        insert into ledger_holds (organization_id, id, account_id, asset, amount, status, reference, request_hash, transaction_id, created_at, updated_at)
        select a.organization_id, bench_seed_uuid(m.ms, 5, m.idx, m.k), a.account_id, a.asset, -m.amount, 'captured', t.id::text || ':hold',
          md5(a.account_id::text) || md5(m.amount::text), bench_seed_uuid(m.ms, 2, m.idx, m.k), m.at - interval '30 seconds', m.at
        ${from} cross join lateral (select bench_seed_uuid(m.ms, 1, m.idx, m.k) as id) t
        where m.amount < 0`,
    },
  ]
  const final = `
    create unlogged table bench_seed_final as
    select a.organization_id, a.account_id, a.owner_id, a.asset, a.clearing_id, m.q, m.invested, m.retained, m.retained_scale, m.epoch, m.at
    ${from} and m.k = a.moves;
    update ledger_accounts l set total = f.q, available = f.q, updated_at = f.at
    from bench_seed_final f where l.organization_id = f.organization_id and l.id = f.account_id;
    update ledger_accounts l set total = l.total - s.q, available = l.available - s.q, updated_at = s.at
    from (select organization_id, clearing_id, sum(q) as q, max(at) as at from bench_seed_final group by organization_id, clearing_id) s
    where l.organization_id = s.organization_id and l.id = s.clearing_id;
    insert into portfolio_positions (organization_id, account_id, owner_id, asset, total, available, invested_usd, retained, retained_scale, epoch, updated_at)
    select organization_id, account_id, owner_id, asset, q, q, invested, retained, retained_scale, epoch, at from bench_seed_final
    on conflict (organization_id, account_id) do update set total = excluded.total, available = excluded.available,
      invested_usd = excluded.invested_usd, retained = excluded.retained, retained_scale = excluded.retained_scale, epoch = excluded.epoch,
      updated_at = excluded.updated_at`
  return { uuidFunction, moves, inserts, final }
}

const SEEDED_TABLES = ['transactions', 'ledger_transactions', 'ledger_holds', 'ledger_entries', 'ledger_accounts', 'portfolio_history', 'portfolio_positions', 'price_points'] as const

/** The tables whose indexes other than their keys are dropped while the seed writes them, and built again after (largest first). */
const REINDEXED_TABLES = ['ledger_entries', 'transactions', 'ledger_transactions', 'ledger_holds']

interface SeedTiming {
  step: string
  /** Which of the two connections ran it. */
  connection: number
  seconds: number
}

interface SeedPhase {
  phase: string
  seconds: number
}

/** Runs `steps` on the connections, each taking the next step as soon as it is free; resolves with each step's time. */
async function onConnections(clients: readonly pg.Client[], steps: readonly { name: string; sql: string }[]): Promise<SeedTiming[]> {
  const timings: SeedTiming[] = []
  let next = 0
  await Promise.all(clients.map(async (client, connection) => {
    for (let i = next++; i < steps.length; i = next++) {
      if (isCleaning()) throw new Interrupted()
      const step = steps[i]!
      log(`seed: ${step.name}…`)
      const started = performance.now()
      await client.query(step.sql)
      const seconds = (performance.now() - started) / 1000
      timings.push({ step: step.name, connection: connection + 1, seconds })
      log(`seed: ${step.name} done in ${seconds.toFixed(1)} s`)
    }
  }))
  return timings
}

/**
 * Seeds a year of deposits and withdrawals of every account of both users, and the position each left, on two
 * connections of its own; resolves with the time of each phase and statement.
 */
async function seed(url: string, baseUrl: string, token: string, users: readonly User[]): Promise<{ phases: SeedPhase[]; timings: SeedTiming[]; seconds: number }> {
  const clients = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })]
  for (const client of clients) {
    await client.connect()
    onCleanup('seed connection', () => client.end())
    // Day buckets are UTC days. The rows are written consistent by construction, so the foreign keys' triggers
    // (which would look up each entry's transaction and account) are skipped, as a restore does. Each connection
    // builds its indexes alone: the two connections already share the two CPUs.
    for (const setting of ['timezone = \'UTC\'', 'work_mem = \'1GB\'', 'maintenance_work_mem = \'1GB\'', 'session_replication_role = replica', 'synchronize_seqscans = off', 'max_parallel_maintenance_workers = 0']) {
      await client.query(`set ${setting}`)
    }
  }
  const client = clients[0]!
  const phases: SeedPhase[] = []
  const timings: SeedTiming[] = []
  const started = performance.now()
  const phase = async (name: string, run: () => Promise<SeedTiming[] | void>) => {
    const t = performance.now()
    const steps = await run()
    if (steps) timings.push(...steps)
    phases.push({ phase: name, seconds: (performance.now() - t) / 1000 })
  }
  const statements = seedStatements()

  await phase('setup', async () => {
    // The day prices a deposit costs: the price history Tessera records (what its historical balance reads too).
    for (const asset of ['BTC', 'ETH']) {
      await expectJson(await fetch(`${baseUrl}/core/assets/${asset}/historical-rates?interval=one-year`, { headers: { authorization: `Bearer ${token}` } }), 200, `GET /core/assets/${asset}/historical-rates`)
    }
    await client.query(`
      create unlogged table bench_seed_prices as
      select asset, bucket_at as day, usd_mid from price_points where resolution = 'day' and asset in ('BTC', 'ETH')
      union all
      select 'USD', day, 1 from generate_series(date_trunc('day', now() - interval '400 days'), now(), interval '1 day') day`)
    await client.query('alter table bench_seed_prices add primary key (asset, day)')

    // The organization's clearing accounts of the rails the movements use, as the ledger opens them.
    const organizationId = (await client.query<{ organization_id: string }>('select organization_id from accounts where id = $1', [users[0]!.accounts[0]!.id])).rows[0]!.organization_id
    const clearing = new Map<string, string>()
    for (const [asset, rail] of Object.entries(RAILS)) {
      const now = new Date()
      await client.query(
        `insert into ledger_accounts (organization_id, id, asset, system_code, may_go_negative, total, available, created_at, updated_at)
         values ($1, $2, $3, $4, true, 0, 0, $5, $5) on conflict (organization_id, system_code, asset) where system_code is not null do nothing`,
        [organizationId, uuidv7(), asset, `clearing:${rail.network}`, now],
      )
      const { rows } = await client.query<{ id: string }>('select id from ledger_accounts where organization_id = $1 and system_code = $2 and asset = $3', [organizationId, `clearing:${rail.network}`, asset])
      clearing.set(asset, rows[0]!.id)
    }

    // Every account's year, ending now: `moves` movements evenly spaced, each account shifted by a fraction of a step.
    // It begins at midnight (UTC) 365 days before today's, so that every day of a one-year chart has a state before it.
    const end = Date.now()
    const start = Math.floor(end / DAY_MS) * DAY_MS - YEAR_MS
    const rows = users.flatMap((user, u) => user.accounts.map((account, i) => {
      const rail = RAILS[account.asset]!
      const accountNode = { id: account.id, type: 'account', ownerId: user.userId }
      const crypto = account.asset !== 'USD'
      const external = uuidv7()
      const destination = crypto ? { type: 'crypto-address', network: rail.network, address: WITHDRAWAL_ADDRESSES[rail.network] } : { type: 'external-account', id: external, network: rail.network }
      return [
        u * settings.accounts + i, user.cohort, organizationId, account.id, user.userId, account.asset, rail.network, clearing.get(account.asset),
        new BigNumber(rail.base).times(1000).div(user.moves).toFixed(), rail.decimals, user.moves, i / settings.accounts, start, (end - start) / user.moves,
        JSON.stringify(crypto ? { type: 'crypto-address', network: rail.network } : { type: 'bank-address', network: rail.network }), JSON.stringify(accountNode),
        JSON.stringify(destination), crypto ? `crypto-address:${rail.network}:${WITHDRAWAL_ADDRESSES[rail.network]}` : `external-account:${external}`,
      ]
    }))
    await client.query(`
      create unlogged table bench_seed_accounts (idx int primary key, cohort text not null, organization_id uuid not null, account_id uuid not null,
        owner_id uuid not null, asset text not null, network text not null, clearing_id uuid not null, unit numeric not null, decimals int not null,
        moves int not null, phase float8 not null, t0_ms bigint not null, step_ms float8 not null, deposit_origin jsonb not null,
        account_node jsonb not null, withdrawal_destination jsonb not null, counterparty text not null)`)
    const insert = insertRows('bench_seed_accounts', SEED_ACCOUNT_COLUMNS, rows)
    await client.query(insert.text, insert.values)
    await client.query(statements.uuidFunction)
  })

  await phase('movements (one connection)', () => onConnections([client], [{ name: 'movements', sql: statements.moves }]))

  // Indexes other than keys are built faster once than row by row: dropped now, built again after the inserts, from
  // their own definitions. The keys stay, and portfolio_history (only a key) grows as the listener grows it.
  const { rows: indexes } = await client.query<{ name: string; definition: string; table: string }>(
    `select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition, c.relname as table
     from pg_index i join pg_class c on c.oid = i.indrelid
     where c.relname = any($1::text[]) and c.relnamespace = 'public'::regnamespace
       and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
     order by array_position($1::text[], c.relname::text), i.indexrelid`,
    [REINDEXED_TABLES],
  )
  await client.query(indexes.map((index) => `drop index ${index.name}`).join('; '))
  await phase('inserts (two connections)', () => onConnections(clients, statements.inserts))
  await phase('indexes (two connections)', () => onConnections(clients, indexes.map((index) => ({ name: `index ${index.name}`, sql: index.definition }))))
  await phase('final balances and positions', async () => {
    await client.query(statements.final)
    await client.query('drop table bench_seed_final, bench_seed_moves, bench_seed_accounts, bench_seed_prices; drop function bench_seed_uuid')
  })
  for (const c of clients) await c.query('reset session_replication_role')
  await phase('vacuum analyze (two connections)', () => onConnections(clients, SEEDED_TABLES.map((table) => ({ name: `vacuum analyze ${table}`, sql: `vacuum (analyze) ${table}` }))))
  return { phases, timings, seconds: (performance.now() - started) / 1000 }
}

interface TableSize {
  table: string
  rows: number
  megabytes: number
}

async function tableSizes(pool: pg.Pool): Promise<TableSize[]> {
  const sizes: TableSize[] = []
  for (const table of SEEDED_TABLES) {
    const { rows: [row] } = await pool.query<{ n: string; bytes: string }>(`select (select count(*) from ${table}) as n, pg_total_relation_size('${table}') as bytes`)
    sizes.push({ table, rows: Number(row!.n), megabytes: Number(row!.bytes) / 1_048_576 })
  }
  return sizes
}

/**
 * That the seed is what the API shows: for the first account of each user, its balance (`GET /core/accounts/{id}`),
 * the sum of its entries, its position and its last history row agree, and it has as many transactions as asked.
 * Resolves with each user's history rows (one per account and minute with activity) and transactions.
 */
async function checkSeed(pool: pg.Pool, baseUrl: string, users: readonly User[]): Promise<Record<Cohort, { historyRows: number; transactions: number }>> {
  const counts = {} as Record<Cohort, { historyRows: number; transactions: number }>
  for (const user of users) {
    const account = user.accounts[0]!
    const shown = await expectJson(await fetch(`${baseUrl}/core/accounts/${account.id}`, { headers: user.acting }), 200, 'GET /core/accounts/{id}')
    const balance = (shown.account as { balance: { total: string; available: string } }).balance
    const { rows: [row] } = await pool.query<{ entries: string; total: string; last_total: string; transactions: string }>(
      `select (select sum(amount) from ledger_entries where organization_id = p.organization_id and account_id = p.account_id)::text as entries,
         p.total::text as total,
         (select total from portfolio_history where organization_id = p.organization_id and account_id = p.account_id order by minute_at desc limit 1)::text as last_total,
         (select count(*) from transactions where organization_id = p.organization_id and (origin_account_id = p.account_id or destination_account_id = p.account_id)) as transactions
       from portfolio_positions p where p.account_id = $1`,
      [account.id],
    )
    const values = [balance.total, balance.available, row!.entries, row!.total, row!.last_total].map((v) => new BigNumber(v).toFixed())
    if (new Set(values).size !== 1 || Number(row!.transactions) !== user.moves) {
      throw new Error(`seed of ${user.cohort}'s account ${account.id} is inconsistent: API total/available ${balance.total}/${balance.available}, entries ${row!.entries}, position ${row!.total}, last history row ${row!.last_total}, ${row!.transactions} transactions for ${user.moves}`)
    }
    const { rows: [history] } = await pool.query<{ n: string }>('select count(*) as n from portfolio_history h join accounts a on a.organization_id = h.organization_id and a.id = h.account_id where a.owner_id = $1', [user.userId])
    counts[user.cohort] = { historyRows: Number(history!.n), transactions: user.moves * user.accounts.length }
  }
  return counts
}

// ---------------------------------------------------------------------------------------------------------------
// Measurement

interface Scenario {
  key: string
  label: string
  /** Whether the issue's target applies (the others are reported for information). */
  target: boolean
  /** A request takes seconds: each run sends this many per connection instead of running for a time. */
  perConnection?: number
  requests: (user: User) => RequestParams & { method: 'GET' | 'POST'; path: string; headers: Record<string, string> }
  /** What a correct body holds, checked once per user before the runs. */
  check: (body: Record<string, unknown>, user: User) => string | null
}

const points = (body: Record<string, unknown>) => (body.historicalBalance as unknown[] | undefined)?.length ?? 0

const SCENARIOS: Scenario[] = [
  {
    key: 'mget-one-day',
    label: '_mget performance, one day',
    target: true,
    requests: (user) => ({ method: 'POST', path: '/core/portfolio/accounts/_mget/performance?interval=one-day', headers: user.headers, body: JSON.stringify({ ids: user.accounts.map((a) => a.id) }) }),
    check: (body, user) => {
      const figures = Object.keys((body.performance ?? {}) as object).length
      return figures === user.accounts.length ? null : `${figures} accounts' figures for ${user.accounts.length}`
    },
  },
  {
    key: 'mget-all-time',
    label: '_mget performance, all time',
    target: false,
    requests: (user) => ({ method: 'POST', path: '/core/portfolio/accounts/_mget/performance?interval=all-time', headers: user.headers, body: JSON.stringify({ ids: user.accounts.map((a) => a.id) }) }),
    check: (body, user) => {
      const figures = Object.keys((body.performance ?? {}) as object).length
      return figures === user.accounts.length ? null : `${figures} accounts' figures for ${user.accounts.length}`
    },
  },
  {
    key: 'account-one-year',
    label: 'account historical balance, one year',
    target: true,
    // Each request asks for the next of the user's accounts: what many clients reading many accounts make the database do.
    requests: (user) => {
      let next = 0
      const pathOf = (id: string) => `/core/portfolio/accounts/${id}/historical-balance?interval=one-year`
      return {
        method: 'GET',
        path: pathOf(user.accounts[0]!.id),
        headers: user.acting,
        setupRequest: (request) => ({ ...request, path: pathOf(user.accounts[next++ % user.accounts.length]!.id) }),
      }
    },
    check: (body) => {
      const list = body.historicalBalance as { balance: { total: string } }[]
      if (points(body) !== 366) return `${points(body)} points, not 366`
      return list.slice(0, -1).every((point) => new BigNumber(point.balance.total).isGreaterThan(0)) ? null : 'a point of the year is worth nothing'
    },
  },
  {
    key: 'overall-one-year',
    label: 'overall historical balance, one year',
    target: false,
    perConnection: 5,
    requests: (user) => ({ method: 'GET', path: '/core/portfolio/historical-balance?interval=one-year', headers: user.acting }),
    check: (body) => (points(body) === 366 ? null : `${points(body)} points, not 366`),
  },
]

interface Run {
  requests: number
  seconds: number
  perSecond: number
  /** Latency, ms, over every response of the run (each response's own, to the microsecond). */
  meanMs: number
  p50: number
  p99: number
  max: number
  /** CPU time per request, ms: Tessera's and PostgreSQL's (null when the cluster is elsewhere). */
  tesseraCpuMs: number
  postgresCpuMs: number | null
  /** Other processes' share of the CPUs during the run (null when the cluster is elsewhere). */
  othersShare: number | null
}

let running: Instance | null = null
onInterrupt(() => running?.stop())

/**
 * One autocannon run, as harness.ts `load`, but hearing each response's own latency: autocannon's histogram keeps
 * whole milliseconds, too coarse for a ratio of requests that take a few.
 */
function timedLoad(options: Options, onResponse: (statusCode: number, ms: number) => void): Promise<Result> {
  return new Promise((resolve, reject) => {
    if (isCleaning()) throw new Interrupted()
    running = autocannon(options, (error, result) => {
      running = null
      if (error) reject(error)
      else resolve(result)
    })
    running.on('response', (_client: unknown, statusCode: number, _bytes: number, ms: number) => onResponse(statusCode, ms))
  })
}

/** The value below which `share` of the sorted values fall (nearest rank). */
const percentile = (sorted: readonly number[], share: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!

/**
 * One autocannon run of `scenario` for `user`: `seconds` long, or `perConnection` requests on each connection for
 * the slow scenarios. Fails on any response but 200, or any socket error.
 */
async function measure(baseUrl: string, meter: CpuMeter, scenario: Scenario, user: User, length: { seconds: number } | { perConnection: number }): Promise<Run> {
  const latencies: number[] = []
  let last = 0
  let unexpected = 0
  const cpu = meter.start()
  const started = performance.now()
  const result = await timedLoad({
    url: baseUrl,
    connections: settings.connections,
    ...('seconds' in length ? { duration: length.seconds } : { amount: length.perConnection * settings.connections }),
    // Slow requests queue behind each other on two CPUs: give them time.
    timeout: 60,
    requests: [scenario.requests(user)],
  }, (statusCode, ms) => {
    latencies.push(ms)
    last = performance.now()
    if (statusCode !== 200) unexpected++
  })
  if (unexpected > 0 || result.errors > 0 || result.timeouts > 0 || latencies.length === 0) {
    throw new Error(`${scenario.label} (${user.cohort}): ${latencies.length - unexpected} of ${latencies.length} responses were 200; status codes ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors, ${result.timeouts} timeouts`)
  }
  const spent = cpu.stop()
  const sorted = [...latencies].sort((a, b) => a - b)
  const elapsed = (last - started) / 1000
  return {
    requests: latencies.length,
    seconds: elapsed,
    perSecond: latencies.length / elapsed,
    meanMs: latencies.reduce((sum, ms) => sum + ms, 0) / latencies.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1]!,
    tesseraCpuMs: spent.tessera / latencies.length,
    postgresCpuMs: spent.postgres === null ? null : spent.postgres / latencies.length,
    othersShare: spent.others === null ? null : spent.others / spent.available,
  }
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

interface ScenarioFigures {
  scenario: string
  label: string
  target: boolean
  rounds: Record<Cohort, Run[]>
  /** Medians over the rounds. */
  median: Record<Cohort, { perSecond: number; meanMs: number; p50: number; p99: number; tesseraCpuMs: number; postgresCpuMs: number | null; othersShare: number | null }>
  meanRatio: number
  p99Ratio: number
  /** Large/small of Tessera's and PostgreSQL's CPU time per request (null when the cluster is elsewhere). */
  cpuRatio: number | null
  met: boolean
}

async function runScenario(baseUrl: string, meter: CpuMeter, scenario: Scenario, users: readonly User[]): Promise<ScenarioFigures> {
  for (const user of users) {
    const request = scenario.requests(user)
    const response = await fetch(`${baseUrl}${request.path}`, { method: request.method, headers: request.headers, ...(request.body ? { body: request.body } : {}) })
    const problem = scenario.check(await expectJson(response, 200, `${scenario.label} (${user.cohort})`), user)
    if (problem) throw new Error(`${scenario.label} (${user.cohort}): ${problem}`)
  }
  warnIfBusy(await backgroundCpuLoad(), `before the "${scenario.label}" scenario`)
  for (const user of users) {
    log(`${scenario.label}: warm-up, ${user.cohort} history`)
    await measure(baseUrl, meter, scenario, user, scenario.perConnection ? { perConnection: 1 } : { seconds: settings.warmup })
  }
  const rounds: Record<Cohort, Run[]> = { small: [], large: [] }
  for (let round = 1; round <= settings.rounds; round++) {
    for (const user of users) {
      const run = await measure(baseUrl, meter, scenario, user, scenario.perConnection ? { perConnection: scenario.perConnection } : { seconds: settings.duration })
      rounds[user.cohort].push(run)
      const others = run.othersShare === null ? '' : `, other processes ${percent(run.othersShare)} of the CPUs`
      log(`${scenario.label}: round ${round}/${settings.rounds}, ${user.cohort}: ${run.perSecond.toFixed(0)} req/s, mean ${run.meanMs.toFixed(2)} ms, p99 ${run.p99.toFixed(1)} ms${others}`)
      if (run.othersShare !== null) warnIfBusy(run.othersShare, `during that run`)
    }
  }
  const medians = Object.fromEntries(COHORTS.map((cohort) => [cohort, {
    perSecond: median(rounds[cohort].map((run) => run.perSecond)),
    meanMs: median(rounds[cohort].map((run) => run.meanMs)),
    p50: median(rounds[cohort].map((run) => run.p50)),
    p99: median(rounds[cohort].map((run) => run.p99)),
    tesseraCpuMs: median(rounds[cohort].map((run) => run.tesseraCpuMs)),
    postgresCpuMs: rounds[cohort][0]!.postgresCpuMs === null ? null : median(rounds[cohort].map((run) => run.postgresCpuMs!)),
    othersShare: rounds[cohort][0]!.othersShare === null ? null : median(rounds[cohort].map((run) => run.othersShare!)),
  }])) as ScenarioFigures['median']
  const meanRatio = medians.large.meanMs / medians.small.meanMs
  const cpuOf = (cohort: Cohort) => (medians[cohort].postgresCpuMs === null ? null : medians[cohort].tesseraCpuMs + medians[cohort].postgresCpuMs!)
  return {
    scenario: scenario.key,
    label: scenario.label,
    target: scenario.target,
    rounds,
    median: medians,
    meanRatio,
    p99Ratio: medians.large.p99 / medians.small.p99,
    cpuRatio: cpuOf('small') === null ? null : cpuOf('large')! / cpuOf('small')!,
    met: meanRatio <= TARGET_RATIO,
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The history lookups, explained: what PostgreSQL does for each user (src/modules/portfolio/portfolio.repository.ts `statesAt`)

interface Explained {
  probe: string
  cohort: Cohort
  executionMs: number
  sharedHit: number
  sharedRead: number
  /** Time spent reading buffers from the operating system, ms. */
  readMs: number
  rows: number
}

/** `statesAt` as Tessera issues it: one row per account and instant, the last history row of a minute before it. */
function statesAtQuery(organizationId: string, accountIds: readonly string[], instants: readonly Date[]): { text: string; values: unknown[] } {
  const accounts = accountIds.map((_, i) => `($${i + 2}::uuid)`).join(', ')
  const times = instants.map((_, i) => `($${accountIds.length + i + 2}::timestamptz)`).join(', ')
  return {
    text: `
      select a.account_id, i.at, h.total, h.available, h.invested_usd, h.retained, h.retained_scale, h.epoch
      from (values ${accounts}) as a(account_id)
      cross join (values ${times}) as i(at)
      join lateral (
        select total, available, invested_usd, retained, retained_scale, epoch from portfolio_history
        where organization_id = $1 and account_id = a.account_id and minute_at < i.at
        order by minute_at desc limit 1
      ) h on true`,
    values: [organizationId, ...accountIds, ...instants],
  }
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the history lookups of each scenario, for each user, with I/O timing: the buffers
 * found in PostgreSQL's cache (hit) and those read from the operating system (read), and the time. The window start
 * of every account, one account's year and a whole user's year are run three times (the last is shown); one
 * account's year is also run for each account in turn, as the scenario asks for them, twice (the second pass is
 * shown, summed over the accounts).
 */
async function explainLookups(url: string, organizationId: string, users: readonly User[]): Promise<{ rows: Explained[]; plans: Record<string, unknown> }> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  onCleanup('explain connection', () => client.end())
  await client.query('set track_io_timing = on')
  const now = Date.now()
  const dayStart = new Date(Math.floor((now - DAY_MS) / 60_000) * 60_000)
  const today = Math.floor(now / DAY_MS) * DAY_MS
  const year = Array.from({ length: 365 }, (_, i) => new Date(today - (364 - i) * DAY_MS))
  const explain = async (accountIds: readonly string[], instants: readonly Date[]) => {
    const query = statesAtQuery(organizationId, accountIds, instants)
    const { rows: [result] } = await client.query<{ 'QUERY PLAN': [Record<string, unknown>] }>(`explain (analyze, buffers, format json) ${query.text}`, query.values)
    const plan = result!['QUERY PLAN'][0]!
    const top = plan.Plan as Record<string, number>
    return { plan, executionMs: plan['Execution Time'] as number, sharedHit: top['Shared Hit Blocks']!, sharedRead: top['Shared Read Blocks']!, readMs: top['I/O Read Time'] ?? 0, rows: top['Actual Rows']! }
  }
  const rows: Explained[] = []
  const plans: Record<string, unknown> = {}
  for (const [probe, accounts, instants] of [
    ['one-day window start, every account', (user: User) => user.accounts.map((a) => a.id), [dayStart]],
    ['one year of days, one account (warm)', (user: User) => [user.accounts[1]!.id], year],
    ['one year of days, every account', (user: User) => user.accounts.map((a) => a.id), year],
  ] as const) {
    for (const user of users) {
      let last = await explain(accounts(user), instants)
      for (let i = 0; i < 2; i++) last = await explain(accounts(user), instants)
      rows.push({ probe, cohort: user.cohort, executionMs: last.executionMs, sharedHit: last.sharedHit, sharedRead: last.sharedRead, readMs: last.readMs, rows: last.rows })
      plans[`${probe} (${user.cohort})`] = last.plan
    }
  }
  const probe = 'one year of days, each account in turn'
  for (const user of users) {
    const sum = { executionMs: 0, sharedHit: 0, sharedRead: 0, readMs: 0, rows: 0 }
    for (let pass = 0; pass < 2; pass++) {
      Object.assign(sum, { executionMs: 0, sharedHit: 0, sharedRead: 0, readMs: 0, rows: 0 })
      for (const account of user.accounts) {
        const result = await explain([account.id], year)
        sum.executionMs += result.executionMs
        sum.sharedHit += result.sharedHit
        sum.sharedRead += result.sharedRead
        sum.readMs += result.readMs
        sum.rows += result.rows
      }
    }
    rows.push({ probe, cohort: user.cohort, ...sum })
  }
  return { rows, plans }
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const startedAt = new Date()
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`)
  const backgroundLoad = await backgroundCpuLoad()
  log(`other processes' CPU before the run: ${percent(backgroundLoad)}`)
  warnIfBusy(backgroundLoad, 'before the run started')
  const url = await scratchDatabase(settings.databaseUrl ?? (await startCluster()), 'bench_portfolio')
  const postgresVersion = await databaseVersion(url)
  const credentials = newClientCredentials()
  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `portfolio-profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : null
  const tessera = await startTessera(url, credentials, { profileDir })
  const token = await accessToken(tessera.baseUrl, credentials)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  onCleanup('status pool', () => pool.end())

  log(`two users, ${settings.accounts} accounts each, through the API`)
  const users = [await makeUser(tessera.baseUrl, token, 'small', settings.small), await makeUser(tessera.baseUrl, token, 'large', settings.large)]
  const total = users.reduce((sum, user) => sum + user.moves * user.accounts.length, 0)
  log(`seeding a year of history: ${settings.small} (small) and ${settings.large} (large) transactions per account, ${total} in all`)
  const seeded = await seed(url, tessera.baseUrl, token, users)
  log(`seeded in ${seeded.seconds.toFixed(0)} s`)
  const sizes = await tableSizes(pool)
  const history = await checkSeed(pool, tessera.baseUrl, users)
  const organizationId = (await pool.query<{ organization_id: string }>('select organization_id from accounts where id = $1', [users[0]!.accounts[0]!.id])).rows[0]!.organization_id

  const measuredLoad = await backgroundCpuLoad()
  log(`other processes' CPU before the measurements: ${percent(measuredLoad)}`)
  warnIfBusy(measuredLoad, 'before the measurements')
  const scenarios = SCENARIOS.filter((scenario) => settings.overall || scenario.key !== 'overall-one-year')
  const figures: ScenarioFigures[] = []
  const meter = cpuMeter(tessera.child.process.pid!, (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid)
  for (const scenario of scenarios) figures.push(await runScenario(tessera.baseUrl, meter, scenario, users))
  log('the history lookups, explained')
  const explained = await explainLookups(url, organizationId, users)
  await stopChild(tessera.child)
  if (settings.ledgerCheck) {
    log('tessera ledger check over the seeded ledger')
    const checking = performance.now()
    await ledgerCheck(url)
    log(`tessera ledger check: every invariant holds (${((performance.now() - checking) / 1000).toFixed(0)} s)`)
  }

  const seedLines = [
    ...seeded.phases.map((p) => `  ${p.phase.padEnd(40)}${p.seconds.toFixed(1).padStart(8)} s`),
    '  of which:',
    ...seeded.timings.filter((t) => !t.step.startsWith('vacuum')).map((t) => `    ${t.step.padEnd(38)}${t.seconds.toFixed(1).padStart(8)} s  (connection ${t.connection})`),
  ]
  const ms = (value: number) => value.toFixed(2).padStart(8)
  const lines = [
    '',
    reportHeading('Portfolio reads', startedAt, postgresVersion),
    `${settings.accounts} accounts per user; small: ${settings.small} transactions per account (${history.small.historyRows} history rows), large: ${settings.large} (${history.large.historyRows} history rows); ` +
      `${settings.connections} connections, ${settings.rounds} rounds of ${settings.duration} s after a ${settings.warmup} s warm-up, interleaved`,
    `other processes' CPU before the run: ${percent(backgroundLoad)}; before the measurements: ${percent(measuredLoad)}`,
    '',
    `seed, ${total} transactions in ${seeded.seconds.toFixed(0)} s:`,
    ...seedLines,
    `  ${'table'.padEnd(40)}${'rows'.padStart(12)}${'MB'.padStart(9)}`,
    ...sizes.map((size) => `  ${size.table.padEnd(40)}${String(size.rows).padStart(12)}${size.megabytes.toFixed(0).padStart(9)}`),
    '',
    `${'scenario (medians over the rounds)'.padEnd(40)}${'history'.padStart(8)}${'req/s'.padStart(8)}${'mean ms'.padStart(9)}${'p50 ms'.padStart(8)}${'p99 ms'.padStart(8)}` +
      `${'CPU ms/request: Tessera'.padStart(25)}${'PostgreSQL'.padStart(12)}${'others'.padStart(8)}`,
    ...figures.flatMap((row) => COHORTS.map((cohort) => {
      const m = row.median[cohort]
      return `${row.label.padEnd(40)}${cohort.padStart(8)}${m.perSecond.toFixed(0).padStart(8)}${ms(m.meanMs).padStart(9)}${m.p50.toFixed(1).padStart(8)}${m.p99.toFixed(1).padStart(8)}` +
        `${m.tesseraCpuMs.toFixed(2).padStart(25)}${(m.postgresCpuMs === null ? 'n/a' : m.postgresCpuMs.toFixed(2)).padStart(12)}${(m.othersShare === null ? 'n/a' : percent(m.othersShare)).padStart(8)}`
    })),
    '',
    `${'ratios large/small'.padEnd(40)}${'mean'.padStart(8)}${'p99'.padStart(8)}${'CPU'.padStart(8)}  target: mean ≤ ${TARGET_RATIO}`,
    ...figures.map((row) => `${row.label.padEnd(40)}${row.meanRatio.toFixed(3).padStart(8)}${row.p99Ratio.toFixed(3).padStart(8)}${(row.cpuRatio === null ? 'n/a' : row.cpuRatio.toFixed(3)).padStart(8)}  ` +
      (row.target ? (row.met ? 'PASS' : 'FAIL') : (row.met ? 'under (not a target)' : 'over (not a target)'))),
    '',
    'history lookups (statesAt as Tessera issues it), EXPLAIN (ANALYZE, BUFFERS), after the runs:',
    `  ${'probe'.padEnd(40)}${'history'.padStart(8)}${'rows'.padStart(8)}${'ms'.padStart(9)}${'buffers hit'.padStart(13)}${'read'.padStart(8)}${'read ms'.padStart(9)}`,
    ...explained.rows.map((row) => `  ${row.probe.padEnd(40)}${row.cohort.padStart(8)}${String(row.rows).padStart(8)}${row.executionMs.toFixed(2).padStart(9)}${String(row.sharedHit).padStart(13)}${String(row.sharedRead).padStart(8)}${row.readMs.toFixed(2).padStart(9)}`),
    '',
    settings.ledgerCheck ? 'tessera ledger check: every invariant holds' : 'tessera ledger check: skipped (BENCH_PORTFOLIO_LEDGER_CHECK=0)',
    '',
  ]
  process.stdout.write(lines.join('\n'))
  writeResults(
    'portfolio',
    startedAt,
    { postgres: postgresVersion, backgroundCpuLoad: backgroundLoad },
    {
      settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null },
      targetRatio: TARGET_RATIO,
      measuredCpuLoad: measuredLoad,
      seed: { seconds: seeded.seconds, phases: seeded.phases, timings: seeded.timings, tables: sizes, history },
      scenarios: figures,
      lookups: explained.rows,
      plans: explained.plans,
    },
    profileDir,
  )
  const missed = figures.filter((row) => row.target && !row.met)
  if (!settings.enforceTarget || missed.length === 0) return 0
  process.stderr.write(`\n${missed.map((row) => `${row.label} ${row.meanRatio.toFixed(3)}`).join(', ')}: above the target of ${TARGET_RATIO} (BENCH_ENFORCE_TARGET=1)\n`)
  return 1
}

await runMain(main)
