import { createHash } from 'node:crypto'
import BigNumber from 'bignumber.js'
import { escapeHtml } from '../../http/html.ts'
import type { PortfolioStatement, TransactionsStatementEntry } from './statements.service.ts'

/**
 * The downloadable forms of statements: CSV (one row per holding or transaction, every figure a plain decimal an
 * accountant's spreadsheet reads as a number) and a printable HTML page (A4, prints as it shows; "Save as PDF" in any
 * browser). Values in the denomination are the amount times the statement's own rate, rounded to `decimals`.
 */

export interface StatementHeading {
  userId: string
  denomination: string
  /** Decimals of the denomination. */
  decimals: number
  generatedAt: Date
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

/** A CSV field (RFC 4180), neutralized against formula injection in spreadsheets (OWASP). */
function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) && !/^-?\d+(\.\d+)?$/.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe
}

function csv(rows: readonly (readonly string[])[]): string {
  return rows.map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n'
}

function valueOf(amount: string, rate: string | undefined, decimals: number): string {
  return rate === undefined ? '' : new BigNumber(amount).times(rate).decimalPlaces(decimals, BigNumber.ROUND_HALF_EVEN).toFixed()
}

function monthOf(period: { from: string }): string {
  const from = new Date(period.from)
  return `${MONTHS[from.getUTCMonth()]} ${from.getUTCFullYear()}`
}

function nodeOf(node: Record<string, unknown>): string {
  const kind = String(node.type ?? '')
  if (kind === 'account' || kind === 'external-account') return `${kind} ${String(node.id ?? '')}`
  if (kind === 'crypto-address') return `${kind} ${String(node.network ?? '')}${node.address === undefined ? '' : ` ${String(node.address)}`}`
  if (kind === 'bank-address') return `${kind} ${String(node.network ?? '')}`
  return kind
}

/** What a transaction was, in words, from its two ends. */
function describe(transaction: TransactionsStatementEntry['transaction']): string {
  const origin = transaction.origin.node as Record<string, unknown>
  const destination = transaction.destination.node as Record<string, unknown>
  const where = (node: Record<string, unknown>) => {
    if (node.type === 'crypto-address') return `${String(node.network ?? '')} address${typeof node.address === 'string' ? ` ${node.address.slice(0, 10)}…` : ''}`
    if (node.type === 'bank-address') return `bank transfer (${String(node.network ?? '')})`
    if (node.type === 'external-account') return node.network === undefined ? 'linked card or account' : `linked account (${String(node.network)})`
    return String(node.type ?? '')
  }
  if (origin.type === 'account' && destination.type === 'account') {
    return transaction.origin.asset === transaction.destination.asset ? 'Transfer between own accounts' : `Exchange ${transaction.origin.asset} → ${transaction.destination.asset}`
  }
  if (destination.type === 'account') return `Deposit from ${where(origin)}`
  return `Withdrawal to ${where(destination)}`
}

function transactionRow(entry: TransactionsStatementEntry, heading: StatementHeading) {
  const { transaction, rates } = entry
  const rate = (asset: string) => rates[`${asset}-${heading.denomination}`]
  const fees = transaction.fees
  const feeValue = fees.reduce((sum, fee) => {
    const value = valueOf(fee.amount, rate(fee.asset), heading.decimals)
    return value === '' ? sum : sum.plus(value)
  }, new BigNumber(0))
  return {
    completedAt: transaction.completedAt ?? transaction.updatedAt,
    id: transaction.id,
    description: describe(transaction),
    from: nodeOf(transaction.origin.node as Record<string, unknown>),
    originAsset: transaction.origin.asset,
    originAmount: transaction.origin.amount,
    originValue: valueOf(transaction.origin.amount, rate(transaction.origin.asset), heading.decimals),
    to: nodeOf(transaction.destination.node as Record<string, unknown>),
    destinationAsset: transaction.destination.asset,
    destinationAmount: transaction.destination.amount,
    destinationValue: valueOf(transaction.destination.amount, rate(transaction.destination.asset), heading.decimals),
    fees: fees.map((fee) => `${fee.amount} ${fee.asset}`).join('; '),
    feesValue: fees.length === 0 ? '0' : feeValue.toFixed(),
  }
}

export function portfolioStatementCsv(statement: PortfolioStatement, heading: StatementHeading): string {
  const d = heading.denomination
  return csv([
    ['period_from', 'period_to', 'asset', 'total', `rate_${d}`, `value_${d}`],
    ...statement.holdings.map((holding) => {
      const rate = statement.rates[`${holding.asset}-${d}`]
      return [statement.period.from, statement.period.to, holding.asset, holding.total, rate ?? '', valueOf(holding.total, rate, heading.decimals)]
    }),
  ])
}

export function transactionsStatementCsv(entries: readonly TransactionsStatementEntry[], heading: StatementHeading): string {
  const d = heading.denomination
  return csv([
    ['completed_at', 'transaction_id', 'description', 'from', 'origin_asset', 'origin_amount', `origin_value_${d}`, 'to', 'destination_asset', 'destination_amount', `destination_value_${d}`, 'fees', `fees_value_${d}`],
    ...entries.map((entry) => {
      const row = transactionRow(entry, heading)
      return [row.completedAt, row.id, row.description, row.from, row.originAsset, row.originAmount, row.originValue, row.to, row.destinationAsset, row.destinationAmount, row.destinationValue, row.fees, row.feesValue]
    }),
  ])
}

const STYLE = `
@page { size: A4; margin: 18mm 16mm; }
* { box-sizing: border-box; }
body { font: 10.5pt/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #111827; margin: 0; padding: 24px; background: #fff; }
main { max-width: 190mm; margin: 0 auto; }
header { display: flex; justify-content: space-between; align-items: flex-end; border-bottom: 2px solid #111827; padding-bottom: 10px; margin-bottom: 18px; }
h1 { font-size: 18pt; margin: 0; letter-spacing: -0.01em; }
.brand { font-weight: 700; font-size: 11pt; letter-spacing: 0.08em; text-transform: uppercase; color: #374151; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0 0 18px; }
dt { color: #6b7280; }
dd { margin: 0; font-variant-numeric: tabular-nums; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 9.5pt; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
th { font-size: 8.5pt; text-transform: uppercase; letter-spacing: 0.05em; color: #4b5563; border-bottom: 1px solid #9ca3af; }
td.n, th.n { text-align: right; white-space: nowrap; }
.id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 7.5pt; color: #6b7280; }
tfoot td { font-weight: 700; border-top: 2px solid #111827; border-bottom: none; }
.empty { color: #6b7280; font-style: italic; padding: 16px 8px; }
footer { margin-top: 22px; color: #6b7280; font-size: 8.5pt; }
tr { break-inside: avoid; }
thead { display: table-header-group; }
`
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64')
/** The printable pages load nothing and run nothing: their one inline style is allowed by its hash. */
export const STATEMENT_PAGE_CSP = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`

function page(title: string, facts: readonly [string, string][], table: string, heading: StatementHeading): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<header><h1>${escapeHtml(title)}</h1><span class="brand">Tessera</span></header>
<dl>${facts.map(([term, value]) => `<dt>${escapeHtml(term)}</dt><dd>${escapeHtml(value)}</dd>`).join('')}</dl>
${table}
<footer>Generated ${escapeHtml(heading.generatedAt.toISOString())}. Values in ${escapeHtml(heading.denomination)} are the amounts at the rates shown: for holdings, the rate at the end of the period; for transactions, the rate at the minute each completed.</footer>
</main>
</body>
</html>
`
}

export function portfolioStatementHtml(statement: PortfolioStatement, heading: StatementHeading): string {
  const d = heading.denomination
  let total = new BigNumber(0)
  const rows = statement.holdings.map((holding) => {
    const rate = statement.rates[`${holding.asset}-${d}`]
    const value = valueOf(holding.total, rate, heading.decimals)
    if (value !== '') total = total.plus(value)
    return `<tr><td>${escapeHtml(holding.asset)}</td><td class="n">${escapeHtml(holding.total)}</td><td class="n">${escapeHtml(rate ?? '—')}</td><td class="n">${escapeHtml(value || '—')}</td></tr>`
  })
  const table = rows.length === 0
    ? '<p class="empty">Nothing was held at the end of the period.</p>'
    : `<table><thead><tr><th>Asset</th><th class="n">Held at period end</th><th class="n">Rate (${escapeHtml(d)})</th><th class="n">Value (${escapeHtml(d)})</th></tr></thead>
<tbody>${rows.join('')}</tbody>
<tfoot><tr><td colspan="3">Total</td><td class="n">${escapeHtml(total.toFixed(heading.decimals))}</td></tr></tfoot></table>`
  return page(`Portfolio statement — ${monthOf(statement.period)}`, [
    ['User', heading.userId],
    ['Period', `${statement.period.from} to ${statement.period.to}`],
    ['Denomination', d],
  ], table, heading)
}

export function transactionsStatementHtml(period: { from: string; to: string }, entries: readonly TransactionsStatementEntry[], heading: StatementHeading): string {
  const d = heading.denomination
  const rows = entries.map((entry) => {
    const row = transactionRow(entry, heading)
    return `<tr><td>${escapeHtml(row.completedAt.slice(0, 16).replace('T', ' '))}</td>` +
      `<td>${escapeHtml(row.description)}<div class="id">${escapeHtml(row.id)}</div></td>` +
      `<td class="n">${escapeHtml(row.originAmount)} ${escapeHtml(row.originAsset)}</td>` +
      `<td class="n">${escapeHtml(row.destinationAmount)} ${escapeHtml(row.destinationAsset)}</td>` +
      `<td class="n">${escapeHtml(row.originValue || '—')}</td><td class="n">${escapeHtml(row.fees || '—')}</td></tr>`
  })
  const table = rows.length === 0
    ? '<p class="empty">No transaction completed in the period.</p>'
    : `<table><thead><tr><th>Completed (UTC)</th><th>Transaction</th><th class="n">Sent</th><th class="n">Received</th><th class="n">Value (${escapeHtml(d)})</th><th class="n">Fees</th></tr></thead>
<tbody>${rows.join('')}</tbody></table>`
  return page(`Transactions statement — ${monthOf(period)}`, [
    ['User', heading.userId],
    ['Period', `${period.from} to ${period.to}`],
    ['Denomination', d],
    ['Transactions', String(entries.length)],
  ], table, heading)
}
