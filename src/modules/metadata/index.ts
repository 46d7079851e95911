/**
 * Client metadata on any entity, with conditional writes and JSON Patch (table `metadata`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { metadataRoutes } from './metadata.routes.ts'
export { CreationErrors, InitialMetadata } from './metadata.schemas.ts'
export { attachInitialMetadata, MetadataService } from './metadata.service.ts'
