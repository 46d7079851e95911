/**
 * Writes reference-data/assets.json: every active ISO 4217 currency (from the `currency-codes` package, names
 * and symbols from the ICU data Node ships), the crypto assets Tessera supports, and the rules that narrow
 * features for users. Run `node scripts/generate-assets.ts` after upgrading `currency-codes`; review the diff.
 */
import fs from 'node:fs'
import path from 'node:path'
import currencyCodes from 'currency-codes'

type Feature = 'buy' | 'sell' | 'deposit' | 'withdraw' | 'transfer'
const ALL_FEATURES: Feature[] = ['buy', 'deposit', 'sell', 'transfer', 'withdraw']

/** Codes in ISO 4217 that are not currencies anyone holds: funds, precious metals, bond units, test and "no currency". */
const NOT_CURRENCIES = new Set([
  'BOV', 'CHE', 'CHW', 'CLF', 'COU', 'MXV', 'USN', 'UYI', 'UYW',
  'XAG', 'XAU', 'XPD', 'XPT', 'XBA', 'XBB', 'XBC', 'XBD', 'XDR', 'XSU', 'XUA', 'XTS', 'XXX',
])
/** Published by ISO after the package's list: kept so that a newer countries list is still covered. */
const LATER_ADDITIONS = [
  { code: 'XCG', digits: 2, currency: 'Caribbean Guilder' },
  { code: 'ZWG', digits: 2, currency: 'Zimbabwe Gold' },
]
/** Fiat currencies whose money moves through Tessera; the others are listed for display and conversion. */
const OPERATED_FIAT = new Set(['USD', 'EUR', 'GBP'])

const crypto = [
  { code: 'BTC', name: 'Bitcoin', symbol: '₿', decimals: 8 },
  { code: 'ETH', name: 'Ether', symbol: 'Ξ', decimals: 18 },
  { code: 'XRP', name: 'XRP', symbol: 'XRP', decimals: 6 },
  { code: 'SOL', name: 'Solana', symbol: 'SOL', decimals: 9 },
  { code: 'LTC', name: 'Litecoin', symbol: 'Ł', decimals: 8 },
  { code: 'USDC', name: 'USDC', symbol: '$', decimals: 6 },
  { code: 'USDT', name: 'Tether USD', symbol: '₮', decimals: 6 },
  { code: 'BUSD', name: 'Binance USD', symbol: 'BUSD', decimals: 18, delisted: true },
]

const names = new Intl.DisplayNames('en', { type: 'currency', fallback: 'none' })
function symbolOf(code: string): string {
  const parts = new Intl.NumberFormat('en', { style: 'currency', currency: code, currencyDisplay: 'narrowSymbol' }).formatToParts(1)
  return parts.find((part) => part.type === 'currency')?.value ?? code
}

const isoEntries = [
  ...currencyCodes.data.filter((entry) => !NOT_CURRENCIES.has(entry.code)),
  ...LATER_ADDITIONS.filter((added) => !currencyCodes.code(added.code)),
]
const fiat = isoEntries.map((entry) => ({
  code: entry.code,
  name: names.of(entry.code) ?? entry.currency,
  type: 'fiat',
  symbol: symbolOf(entry.code),
  decimals: entry.digits,
  delisted: false,
  features: OPERATED_FIAT.has(entry.code) ? ALL_FEATURES : [],
}))

const file = {
  source: {
    fiat: `ISO 4217 list one via currency-codes ${(JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../node_modules/currency-codes/package.json'), 'utf8')) as { version: string }).version} (data of ${currencyCodes.publishDate}), names and symbols from ICU (Node ${process.versions.node}, ICU ${process.versions.icu})`,
  },
  assets: [
    ...fiat,
    ...crypto.map(({ code, name, symbol, decimals, delisted }) => ({ code, name, type: 'crypto', symbol, decimals, delisted: delisted ?? false, features: delisted ? [] : ALL_FEATURES })),
  ].sort((a, b) => a.code.localeCompare(b.code)),
  restrictions: [
    {
      description: 'Sandbox rule: residents of New York (no BitLicense in the sandbox) may not buy or sell crypto.',
      regions: ['US-NY'],
      assetTypes: ['crypto'],
      features: ['buy', 'sell'],
    },
  ],
  cooldowns: [
    {
      rule: 'financial-promotions',
      description: 'UK financial promotions rules: a 24-hour cooling-off period before a new customer first buys or deposits crypto.',
      regions: ['GB'],
      assetTypes: ['crypto'],
      features: ['buy', 'deposit'],
      hours: 24,
    },
  ],
}

const target = path.resolve(import.meta.dirname, '../reference-data/assets.json')
fs.writeFileSync(target, `${JSON.stringify(file, null, 2)}\n`)
process.stdout.write(`${target}: ${file.assets.length} assets (${fiat.length} fiat)\n`)
