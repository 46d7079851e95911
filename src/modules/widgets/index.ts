/**
 * Widget sessions (no table: a session is its signed token) and the hosted widget pages.
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { widgetsRoutes } from './widgets.routes.ts'
export { WidgetsService } from './widgets.service.ts'
export { pagesRoutes } from './pages.routes.ts'
export { kycWidgetSessionsRoutes } from './kyc-sessions.routes.ts'
export { KycWidgetSessionsService } from './kyc-sessions.service.ts'
export { travelRuleWidgetSessionsRoutes } from './travel-rule-sessions.routes.ts'
export { TravelRuleWidgetSessionsService } from './travel-rule-sessions.service.ts'
