/**
 * Users' uploaded files and their signed links (table `files`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { filesRoutes } from './files.routes.ts'
export { FilesSettingsFile } from './files.schemas.ts'
export { FilesService } from './files.service.ts'
