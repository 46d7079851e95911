import assert from 'node:assert/strict'
import { test } from 'node:test'
import { portfolioStatementCsv, portfolioStatementHtml, STATEMENT_PAGE_CSP, transactionsStatementCsv, transactionsStatementHtml } from './statement-documents.ts'
import type { TransactionsStatementEntry } from './statements.service.ts'

const heading = { userId: '5d894b41-270e-4162-a4f9-dae31bc53b1c', denomination: 'EUR', decimals: 2, generatedAt: new Date('2026-04-02T08:00:00.000Z') }
const period = { from: '2026-03-01T00:00:00.000Z', to: '2026-03-31T23:59:59.999Z' }

const entry = (overrides: Partial<TransactionsStatementEntry['transaction']> = {}): TransactionsStatementEntry => ({
  rates: { 'GBP-EUR': '1.15', 'BTC-EUR': '60460.77' },
  transaction: {
    id: '8daa6dbd-21a0-4305-93c3-bd1d04bc575c',
    origin: { asset: 'GBP', amount: '100', rate: '53484.17885426114102547488', node: { type: 'external-account', id: 'd3401ecb-60dd-4d35-975b-1dfb58c0ba1a', ownerId: heading.userId, network: 'sepa' } },
    destination: { asset: 'BTC', amount: '0.00186036', rate: '0.00001869711794070723', node: { type: 'account', id: '9287ee0a-0bcb-43cf-9791-f96bb49ba3fb', ownerId: heading.userId } },
    denomination: { asset: 'GBP', amount: '100', rate: '1', target: 'origin' },
    fees: [{ type: 'deposit', code: 'service', asset: 'GBP', amount: '0.5' }],
    status: 'completed',
    quotedAt: '2026-03-23T11:57:00.000Z',
    createdAt: '2026-03-23T11:58:00.000Z',
    updatedAt: '2026-03-23T12:06:55.116Z',
    completedAt: '2026-03-23T12:06:55.116Z',
    ...overrides,
  } as TransactionsStatementEntry['transaction'],
})

test('the portfolio statement as CSV: one row per holding, values at the statement\'s rates', () => {
  const csv = portfolioStatementCsv({ period, rates: { 'BTC-EUR': '61728', 'ETH-EUR': '2000.5' }, holdings: [{ asset: 'BTC', total: '0.02' }, { asset: 'ETH', total: '1.333' }] }, heading)
  assert.equal(csv, [
    'period_from,period_to,asset,total,rate_EUR,value_EUR',
    `${period.from},${period.to},BTC,0.02,61728,1234.56`,
    `${period.from},${period.to},ETH,1.333,2000.5,2666.67`,
    '',
  ].join('\r\n'))
})

test('the transactions statement as CSV: amounts, values and fees of each transaction', () => {
  const csv = transactionsStatementCsv([entry()], heading)
  const [header, row, end] = csv.split('\r\n')
  assert.equal(header, 'completed_at,transaction_id,description,from,origin_asset,origin_amount,origin_value_EUR,to,destination_asset,destination_amount,destination_value_EUR,fees,fees_value_EUR')
  assert.equal(row, '2026-03-23T12:06:55.116Z,8daa6dbd-21a0-4305-93c3-bd1d04bc575c,Deposit from linked account (sepa),external-account d3401ecb-60dd-4d35-975b-1dfb58c0ba1a,GBP,100,115,account 9287ee0a-0bcb-43cf-9791-f96bb49ba3fb,BTC,0.00186036,112.48,0.5 GBP,0.58')
  assert.equal(end, '')
})

test('CSV fields are quoted when they must be, and never run as spreadsheet formulas', () => {
  const hostile = entry({ destination: { asset: 'BTC', amount: '1', rate: '1', node: { type: 'crypto-address', network: 'bitcoin', address: '=HYPERLINK("http://evil")' } } } as never)
  const row = transactionsStatementCsv([hostile], heading).split('\r\n')[1]!
  assert.ok(row.includes(`"crypto-address bitcoin =HYPERLINK(""http://evil"")"`), row)
  const leading = entry({ destination: { asset: 'BTC', amount: '1', rate: '1', node: { type: '=cmd' } } } as never)
  assert.ok(transactionsStatementCsv([leading], heading).split('\r\n')[1]!.includes(`,'=cmd,`))
})

test('the printable pages escape what they show and allow nothing but their own style', () => {
  const html = transactionsStatementHtml(period, [entry({ id: '<script>alert(1)</script>' } as never)], heading)
  assert.ok(!html.includes('<script>'))
  assert.ok(html.includes('&#60;script&#62;'))
  assert.match(html, /Transactions statement — March 2026/)
  assert.match(STATEMENT_PAGE_CSP, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'/)
  const portfolio = portfolioStatementHtml({ period, rates: { 'BTC-EUR': '61728' }, holdings: [{ asset: 'BTC', total: '0.02' }] }, heading)
  assert.match(portfolio, /<td class="n">1234.56<\/td><\/tr><\/tfoot>/)
  assert.match(portfolioStatementHtml({ period, rates: {}, holdings: [] }, heading), /Nothing was held/)
})
