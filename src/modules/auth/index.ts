/**
 * Organizations, API clients, scopes and access tokens (tables `organizations`, `clients`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { authRoutes } from './auth.routes.ts'
export { AuthService } from './auth.service.ts'
export { ClientInputError, ClientsService } from './clients.service.ts'
export { kycConnectorConfigScopes, ScopeCatalogue } from './scopes.ts'
export { SigningKey, TokenSigner, type SigningKeys } from './tokens.ts'
