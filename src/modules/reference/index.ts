/**
 * Reference data: assets and prices, networks, countries, rails (tables `price_points`, `asset_cooldown_skips`; job
 * `assets.cooldown-end`, which announces `core.assets.cooldown-ended`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { canonicalAddress, type AddressFamily, type Chain } from './addresses.ts'
export { assetsRoutes } from './assets.routes.ts'
export { AssetsFile } from './assets.schemas.ts'
export { ASSET_EVENTS, AssetCatalogue, AssetsService, COOLDOWN_END_JOB, userDirectoryOf } from './assets.service.ts'
export { countriesRoutes } from './countries.routes.ts'
export { CountriesFile, CountryRestrictionsFile } from './countries.schemas.ts'
export { CountriesService } from './countries.service.ts'
export { networksRoutes } from './networks.routes.ts'
export { NetworksFile } from './networks.schemas.ts'
export { NetworksService } from './networks.service.ts'
export { railsRoutes } from './rails.routes.ts'
export { RailsFile, type Rail } from './rails.schemas.ts'
export { RailsService } from './rails.service.ts'
export { ratesRoutes } from './rates.routes.ts'
export { RatesService } from './rates.service.ts'
export { historyBuckets, INTERVAL_STEPS, RATE_SIGNIFICANT_DIGITS, type HistoryInterval } from './rates.ts'
export { loadReferenceData, ReferenceDataError } from './reference-data.ts'
