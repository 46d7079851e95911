/**
 * Transactions: deposits, trades and transfers, and their status changes (table `transactions`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { DepositsService, type DepositStart } from './deposits.service.ts'
export { transactionsRoutes } from './transactions.routes.ts'
export { Denomination, Endpoint, Fees, Transaction, TransactionParams, type TransactionNode, type TransactionStatusReason } from './transactions.schemas.ts'
export { TransactionsService, type CompletedMovement, type QuotedMovement, type TransactionTerms } from './transactions.service.ts'
