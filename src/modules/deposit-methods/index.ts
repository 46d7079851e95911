/**
 * Deposit addresses and bank details per account, and the payments the rails report at them (tables
 * `deposit_methods`, `deposit_destinations`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { depositMethodsRoutes } from './deposit-methods.routes.ts'
export { DepositBanksFile } from './deposit-methods.schemas.ts'
export { DepositMethodsService } from './deposit-methods.service.ts'
export { depositTestHelpersRoutes } from './deposit-test-helpers.routes.ts'
export { DepositTestHelpersService } from './deposit-test-helpers.service.ts'
export { IncomingDepositsService } from './incoming-deposits.service.ts'
