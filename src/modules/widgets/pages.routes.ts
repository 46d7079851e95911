import { browserAssets, type BrowserAsset } from '../../http/browser-bundles.ts'
import { hostedPage as html, sendHtml } from '../../http/html.ts'
import type { App } from '../../http/types.ts'

export interface PagesSettings {
  publicUrl: string
  /** Origins that may frame the widgets: `*` for any (sandbox), else the list (none by default in production). */
  allowedOrigins: '*' | readonly string[]
  /** Sandbox: the example merchant page is served, and the card issuer's 3-D Secure pages are Tessera's own. */
  sandbox: boolean
  /**
   * Where the travel-rule widget reaches the travel-rule node (a session's `nodeUrl`), when it is not Tessera itself:
   * its origin is added to that page's `connect-src`. The sandbox node is Tessera's own (`PUBLIC_URL/sandbox/…`).
   */
  travelRuleNodeUrl?: string | null
}

/**
 * The policy of a page: only its own scripts and styles, Tessera's API (`api`: the public URL's origin, which is
 * the page's own unless it is reached under another name), framed only by `ancestors`.
 */
function policy(api: string, ancestors: string, frames: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${api}`,
    `frame-src ${frames}`,
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${ancestors}`,
  ].join('; ')
}

/**
 * The pages Tessera serves to browsers: the hosted payment widget (`session.url`), the page the card issuer sends
 * the cardholder back to after 3-D Secure, the example merchant page (sandbox), and their bundles (built from the
 * repository's TypeScript at start, src/http/browser-bundles.ts). Not part of the API document.
 */
export function pagesRoutes(settings: PagesSettings) {
  return async function routes(app: App): Promise<void> {
    const assets = await browserAssets()
    const ancestors = settings.allowedOrigins === '*' ? '*' : settings.allowedOrigins.length > 0 ? settings.allowedOrigins.join(' ') : "'none'"
    // A page framed inside the widget has the widget (this origin) among its ancestors too.
    const nestedAncestors = ancestors === '*' ? '*' : ancestors === "'none'" ? "'self'" : `'self' ${ancestors}`
    // A production issuer's 3-D Secure page lives on its own (https) origin; the sandbox's is Tessera's.
    const api = new URL(settings.publicUrl).origin
    const issuerFrames = settings.sandbox ? `'self' ${api}` : `'self' ${api} https:`

    app.get<{ Params: { file: string } }>('/hosted/assets/:file', { schema: { hide: true } }, async (request, reply) => {
      const asset: BrowserAsset | undefined = assets.get(request.params.file)
      if (!asset) return reply.callNotFound()
      if (request.headers['if-none-match'] === asset.etag) return reply.status(304).header('etag', asset.etag).send()
      return reply
        .header('content-type', asset.contentType)
        .header('etag', asset.etag)
        .header('cache-control', 'no-cache')
        .header('x-content-type-options', 'nosniff')
        // The SDK is loaded by clients' own pages, from their origins.
        .header('access-control-allow-origin', '*')
        .header('cross-origin-resource-policy', 'cross-origin')
        .send(asset.body)
    })

    const widgetPage = html({ title: 'Payment', script: 'payment-widget.js', style: 'payment-widget.css', apiBase: settings.publicUrl })
    app.get('/hosted/payment-widget/', { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, 200, widgetPage, policy(api, ancestors, issuerFrames)))

    const returnPage = html({ title: 'Returning to the payment', script: 'payment-widget-return.js', style: 'payment-widget.css', apiBase: settings.publicUrl })
    // Framed by the widget (the issuer's page sends the cardholder here, inside it): its ancestors are the widget's.
    app.get('/hosted/payment-widget/3ds-return', { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, 200, returnPage, policy(api, nestedAncestors, "'none'")))

    // The KYC widget frames nothing; it is framed like the payment widget.
    const kycWidgetPage = html({ title: 'Identity verification', script: 'kyc-widget.js', style: 'kyc-widget.css', apiBase: settings.publicUrl })
    app.get('/hosted/kyc-widget/', { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, 200, kycWidgetPage, policy(api, ancestors, "'none'")))

    // The travel-rule widget frames nothing; it also talks to the travel-rule node, which may live elsewhere.
    const nodeOrigin = settings.travelRuleNodeUrl ? new URL(settings.travelRuleNodeUrl).origin : api
    const travelRuleApi = nodeOrigin === api ? api : `${api} ${nodeOrigin}`
    const travelRulePage = html({ title: 'Travel rule', script: 'travel-rule-widget.js', style: 'travel-rule-widget.css', apiBase: settings.publicUrl })
    app.get('/hosted/travel-rule-widget/', { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, 200, travelRulePage, policy(travelRuleApi, ancestors, "'none'")))

    if (settings.sandbox) {
      const examplePage = html({ title: 'Tessera payment widget example', script: 'example-payment-widget.js', style: 'example-payment-widget.css', apiBase: settings.publicUrl })
      app.get('/examples/payment-widget/', { schema: { hide: true } }, async (_request, reply) => sendHtml(reply, 200, examplePage, policy(api, "'none'", `'self' ${api}`)))
    }
  }
}
