/**
 * The audit trail: an append-only record of every write a client makes through the API (table `audit_trail`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { auditObject, withoutAudit } from './audit-scope.ts'
export { registerAuditTrail } from './audit.http.ts'
export { AuditTrailService, type AuditEntryView, type AuditFilter } from './audit.service.ts'
