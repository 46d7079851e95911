/**
 * KYC processes and their state machine (table `kyc_processes`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { KYC_PROCESSES, KYC_WIDGET_PROCESSES } from './kyc.machine.ts'
export { kycRoutes } from './kyc.routes.ts'
export { KycService } from './kyc.service.ts'
export { KycIdentity, KycProfile, KycProofOfAddress } from './kyc.schemas.ts'
export { UpdateAddressBody, UpdateIdentityBody, UpdateProfileBody, UpdateProofOfAddressBody } from './kyc.schemas.ts'
