import formbody from '@fastify/formbody'
import type { FastifyReply } from 'fastify'
import type { SandboxCardPaymentRow } from '../../db/schema.ts'
import { escapeHtml, sendHtml } from '../../http/html.ts'
import type { App } from '../../http/types.ts'
import type { SandboxCardProcessor } from './sandbox.ts'

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; display: grid; place-items: center; min-height: 100vh; background: #eef1f5; color: #1d2330; }
main { background: #fff; border-radius: 12px; padding: 24px; max-width: 360px; width: calc(100% - 48px); box-shadow: 0 4px 24px #0002; }
h1 { font-size: 1.1rem; margin: 0 0 4px; }
p { margin: 8px 0; line-height: 1.4; }
.amount { font-size: 1.6rem; font-weight: 600; margin: 16px 0; }
.note { font-size: .85rem; color: #5a6375; }
form { display: flex; flex-direction: column; gap: 8px; margin-top: 16px; }
button { font: inherit; padding: 10px; border-radius: 8px; border: 1px solid #1d2330; cursor: pointer; }
button#pass { background: #1d2330; color: #fff; }
button#fail { background: #fff; color: #b3261e; border-color: #b3261e; }
a { color: #1d4ed8; }
@media (prefers-color-scheme: dark) { body { background: #11151c; color: #e8eaf0; } main { background: #1b212b; } .note { color: #9aa3b5; } }
`

/** Whether the cardholder passed the challenge: a challenge past its time, unanswered, did not (it was abandoned). */
const authenticated = (row: SandboxCardPaymentRow) => row.status === 'authorized' || row.status === 'captured'

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/sandbox/3ds/issuer.css">
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`
}

function originOf(url: string): string | null {
  try {
    const origin = new URL(url).origin
    return origin === 'null' ? null : origin
  } catch {
    return null
  }
}

/**
 * The sandbox card issuer's 3-D Secure challenge page, served by Tessera itself (its address is the transaction's
 * `origin.node.confirmationUrl`): the cardholder completes or fails the authentication, and is sent back to the
 * payment's `returnUrl`. A page left unanswered expires with the challenge (SANDBOX_3DS_CHALLENGE_TTL_MS). No
 * script runs on it; its address's random id is its only credential, as with a real issuer's page.
 */
export function sandboxIssuerRoutes(processor: SandboxCardProcessor, settings: { frameAncestors: string }) {
  return async function routes(app: App): Promise<void> {
    await app.register(formbody)

    const send = (reply: FastifyReply, status: number, body: string, returnUrl?: string) => {
      const returnOrigin = returnUrl !== undefined ? originOf(returnUrl) : null
      // The answer's form posts here, then redirects to the payment's return URL: both are form targets.
      const formTargets = `'self'${returnOrigin ? ` ${returnOrigin}` : ''}`
      return sendHtml(reply, status, body, `default-src 'none'; style-src 'self'; base-uri 'none'; form-action ${formTargets}; frame-ancestors ${settings.frameAncestors}`)
    }

    const closed = (row: SandboxCardPaymentRow) =>
      layout('Authentication closed', `<h1>This authentication is closed</h1>
<p id="outcome" data-status="${escapeHtml(authenticated(row) ? 'authenticated' : 'not-authenticated')}">${authenticated(row) ? 'The payment was authenticated.' : 'The payment was not authenticated.'}</p>
<p><a id="return" href="${escapeHtml(row.return_url)}">Back to the merchant</a></p>`)

    app.get('/sandbox/3ds/issuer.css', { schema: { hide: true } }, async (_request, reply) =>
      reply.header('content-type', 'text/css; charset=utf-8').header('cache-control', 'no-cache').send(STYLE))

    app.get<{ Params: { id: string } }>('/sandbox/3ds/:id', { schema: { hide: true } }, async (request, reply) => {
      const row = /^[0-9a-f-]{36}$/i.test(request.params.id) ? await processor.challenge(request.params.id.toLowerCase()) : null
      if (!row) return send(reply, 404, layout('Not found', '<h1>No such authentication</h1><p>The link is wrong, or not from this sandbox.</p>'))
      if (row.status !== 'challenge' || row.challenge_expires_at! <= new Date()) return send(reply, 200, closed(row), row.return_url)
      const amount = `${escapeHtml(row.amount)} ${escapeHtml(row.asset)}`
      return send(reply, 200, layout('Verify your payment', `<h1>Sandbox Bank — 3-D Secure</h1>
<p>Confirm the payment of</p>
<p class="amount" id="amount">${amount}</p>
<p>with your ${escapeHtml(row.network)} card ending in <strong>${escapeHtml(row.last_four)}</strong>.</p>
<p class="note">This is the sandbox issuer: choose the outcome to simulate. Leaving the page unanswered abandons the authentication; it expires at ${escapeHtml(row.challenge_expires_at!.toISOString())}.</p>
<form method="post" action="/sandbox/3ds/${escapeHtml(row.id)}">
<button id="pass" type="submit" name="answer" value="pass">Complete authentication</button>
<button id="fail" type="submit" name="answer" value="fail">Fail authentication</button>
</form>`), row.return_url)
    })

    app.post<{ Params: { id: string }; Body: unknown }>('/sandbox/3ds/:id', { schema: { hide: true } }, async (request, reply) => {
      const answer = (request.body as Record<string, unknown> | null)?.answer
      const id = request.params.id
      if (!/^[0-9a-f-]{36}$/i.test(id) || (answer !== 'pass' && answer !== 'fail')) {
        return send(reply, 400, layout('Bad request', '<h1>Choose an outcome</h1><p>Answer with <code>pass</code> or <code>fail</code>.</p>'))
      }
      const row = await processor.answerChallenge(id.toLowerCase(), answer)
      if (!row) return send(reply, 404, layout('Not found', '<h1>No such authentication</h1>'))
      return reply.status(303).header('location', row.return_url).header('cache-control', 'no-store').send()
    })
  }
}
