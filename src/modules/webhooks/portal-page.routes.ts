import { hostedPage, sendHtml } from '../../http/html.ts'
import type { App } from '../../http/types.ts'

export interface PortalPageSettings {
  publicUrl: string
}

/**
 * The portal's policy: only its own scripts and styles, Tessera's API (`api`: the public URL's origin), never framed
 * (it holds an organization's signing secrets), and no form ever submitted by the browser (the page sends JSON).
 */
function policy(api: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${api}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/**
 * The webhook portal's page (`GET /hosted/webhooks/`), which a management link opens; its bundle is served with the
 * other hosted pages' (`/hosted/assets/webhook-portal.js`) and its API is webhooks.routes.ts's. Not part of the API
 * document.
 */
export function webhookPortalPageRoutes(settings: PortalPageSettings) {
  return async function routes(app: App): Promise<void> {
    const page = hostedPage({ title: 'Webhooks', script: 'webhook-portal.js', style: 'webhook-portal.css', apiBase: settings.publicUrl })
    const csp = policy(new URL(settings.publicUrl).origin)
    app.get('/hosted/webhooks/', { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, 200, page, csp))
  }
}
