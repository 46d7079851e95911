/**
 * Organizations' identity-verification provider settings (table `kyc_connector_configs`), and the ingestions that
 * import users' verifications from Veriff and Sumsub (tables `kyc_ingestions`, `kyc_ingestion_references`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { kycConnectorRoutes } from './kyc-connector.routes.ts'
export { KycConnectorService } from './kyc-connector.service.ts'
export { connectorSecrets } from './kyc-connector.sealed.ts'
export { kycIngestionsRoutes } from './ingestions.routes.ts'
export { INGESTION_JOB, KycIngestionsService } from './ingestions.service.ts'
