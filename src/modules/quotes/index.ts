/**
 * Priced quotes for trades and transfers (table `quotes`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { quotesRoutes } from './quotes.routes.ts'
export { Quote, TransactionRulesFile } from './quotes.schemas.ts'
export { MIN_QUOTE_TTL_MS, QuotesService } from './quotes.service.ts'
