/**
 * What a user may do, derived from their KYC, terms of service and residence (no table).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { capabilitiesRoutes } from './capabilities.routes.ts'
export { CapabilitiesFile } from './capabilities.schemas.ts'
export { CapabilitiesService, capabilitySourcesOf } from './capabilities.service.ts'
