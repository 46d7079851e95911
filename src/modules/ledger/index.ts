/**
 * The double-entry ledger: balances, entries and holds (tables `ledger_*`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { amountInvalid, parseAmount } from './ledger.rules.ts'
export { checkLedger, formatAmount, LedgerService, type AccountBalance, type LedgerAssets, type Movement } from './ledger.service.ts'
