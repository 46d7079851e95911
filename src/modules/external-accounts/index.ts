/**
 * External accounts: users' bank accounts, cards, crypto addresses and payment app accounts (table
 * `external_accounts`). The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { externalAccountsRoutes } from './external-accounts.routes.ts'
export { CardBinsFile, type ExternalAccount } from './external-accounts.schemas.ts'
export { ExternalAccountsService } from './external-accounts.service.ts'
