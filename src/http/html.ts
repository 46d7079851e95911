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
