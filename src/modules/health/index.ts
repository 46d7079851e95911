/**
 * Liveness, readiness and metrics (no table).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { healthRoutes } from './health.routes.ts'
