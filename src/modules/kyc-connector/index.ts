/**
 * Organizations' identity-verification provider settings (table `kyc_connector_configs`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { kycConnectorRoutes } from './kyc-connector.routes.ts'
export { KycConnectorService } from './kyc-connector.service.ts'
