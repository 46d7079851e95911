/**
 * The deployment's key rings (table `key_ring`): the data keys that seal secrets at rest, the keys that sign access
 * tokens, and the root stable purpose keys derive from; their rotation, the re-sealing of every module's secrets, and
 * the retiring of old keys (`tessera keys …`, docs/deployment.md). The module's public entry: the rest of src/ imports
 * it from here only (docs/architecture.md).
 */
export { KEY_RING_CHANGE, KeyRing, KeyRingError, type KeyRingLogger, type KeyRingSeeds } from './key-ring.ts'
export { KeysService, type KeysSettings, type KeyView, type ResealReport } from './keys.service.ts'
