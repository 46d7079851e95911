/**
 * Terms of service and their acceptances (table `terms_of_service_acceptances`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { termsOfServiceRoutes } from './terms-of-service.routes.ts'
export { TermsOfServiceFile } from './terms-of-service.schemas.ts'
export { TermsOfServiceService } from './terms-of-service.service.ts'
