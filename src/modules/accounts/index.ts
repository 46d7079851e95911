/**
 * The users' accounts, one asset each, their balances kept by the ledger (table `accounts`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { accountsRoutes } from './accounts.routes.ts'
export { AccountParams, type Account } from './accounts.schemas.ts'
export { AccountsService } from './accounts.service.ts'
