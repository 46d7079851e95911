/**
 * Webhooks: endpoints, delivery of the outbox's events to them, and the management portal.
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { WebhookSender } from './delivery-client.ts'
export { EVENT_CATALOGUE } from './catalogue.ts'
export { DEFAULT_RETRY_DELAYS_MS } from './retry-schedule.ts'
export { WebhookMetrics } from './webhooks.metrics.ts'
export { webhookPortalPageRoutes } from './portal-page.routes.ts'
export { webhookPortalRoutes, webhooksRoutes } from './webhooks.routes.ts'
export { DELIVERY_JOB, DISPATCH_JOB, WebhooksService, type WebhooksSettings } from './webhooks.service.ts'
export { webhookSecrets } from './webhooks.sealed.ts'
