import type { FastifyReply } from 'fastify'

/** Text made safe to place in HTML, in an element or a quoted attribute. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * Sends a page Tessera renders itself (the hosted widgets, the sandbox issuer's page): under its content security
 * policy, never cached, never sniffed, sending no referrer (their addresses carry credentials).
 */
export function sendHtml(reply: FastifyReply, status: number, body: string, csp: string): FastifyReply {
  return reply
    .status(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', csp)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .send(body)
}

/**
 * A page of Tessera's browser code: an empty `#app` its bundle fills, the bundle's styles, and where the API is
 * (`<meta name="tessera-api-base">`, read by widgets/shared/api.ts). The bundles are served at `/hosted/assets/`.
 */
export function hostedPage(input: { title: string; script: string; style?: string; apiBase: string }): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="tessera-api-base" content="${escapeHtml(input.apiBase)}">`,
    `<title>${escapeHtml(input.title)}</title>`,
    ...(input.style ? [`<link rel="stylesheet" href="/hosted/assets/${input.style}">`] : []),
    '</head>',
    '<body>',
    '<div id="app"></div>',
    `<script type="module" src="/hosted/assets/${input.script}"></script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n')
}
