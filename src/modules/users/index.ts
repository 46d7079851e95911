/**
 * Individual and business users (table `users`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { usersRoutes } from './users.routes.ts'
export { checkBirthdate, checkPastTimestamp } from './users.rules.ts'
export { Address } from './users.schemas.ts'
export { UsersService, type Profile } from './users.service.ts'
