/**
 * External accounts: users' bank accounts, cards, crypto addresses and payment app accounts (table
 * `external_accounts`; job `external-accounts.status-change`, which announces `core.external-account.status-changed`),
 * and the verifications of crypto addresses (table `external_account_verifications`). The module's public entry: the
 * rest of src/ imports it from here only (docs/architecture.md).
 */
export { externalAccountsRoutes } from './external-accounts.routes.ts'
export { CardBinsFile, type ExternalAccount } from './external-accounts.schemas.ts'
export { ExternalAccountsService, STATUS_CHANGE_JOB } from './external-accounts.service.ts'
export { cardNumbers } from './card-numbers.sealed.ts'
export { VERIFICATION_LEVELS, type VerificationLevel, type VerificationStatus } from './verification.machine.ts'
export type { SelfDeclaration, SignatureProof } from './verification-proofs.ts'
export type { Verification } from './verifications.schemas.ts'
