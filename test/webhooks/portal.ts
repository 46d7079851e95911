import assert from 'node:assert/strict'
import { bearer, type TestContext } from '../helpers.ts'

export const PORTAL_API = '/hosted/webhooks/api'

export interface Endpoint {
  id: string
  url: string
  description: string
  eventTypes: string[]
  status: 'enabled' | 'disabled'
  disabledReason?: string
}

export interface Message {
  id: string
  eventId: string
  eventType: string
  webhookId: string
  origin: string
  status: string
  attempts: number
}

export interface Attempt {
  id: string
  messageId: string
  eventId: string
  attempt: number
  succeeded: boolean
  responseStatus?: number
  responseExcerpt: string
  error?: string
}

/** The link token of a management link (its fragment's `link`). */
export async function managementLink(ctx: TestContext, token: string): Promise<string> {
  const response = await ctx.request({ method: 'POST', url: '/core/webhooks/management-link', headers: bearer(token) })
  assert.equal(response.status, 200, response.body)
  const { url } = response.json<{ managementLink: { url: string } }>().managementLink
  return new URLSearchParams(new URL(url).hash.slice(1)).get('link')!
}

/** A portal session of the token's organization, as the portal page opens it: the headers its calls send. */
export async function openPortal(ctx: TestContext, token: string): Promise<Record<string, string>> {
  const response = await ctx.request({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: await managementLink(ctx, token) } })
  assert.equal(response.status, 201, response.body)
  return { authorization: `Bearer ${response.json<{ session: { token: string } }>().session.token}` }
}

export async function createEndpoint(ctx: TestContext, portal: Record<string, string>, body: Record<string, unknown>): Promise<Endpoint> {
  const response = await ctx.request({ method: 'POST', url: `${PORTAL_API}/endpoints`, headers: portal, payload: body })
  assert.equal(response.status, 201, response.body)
  return response.json<{ endpoint: Endpoint }>().endpoint
}

export async function secretOf(ctx: TestContext, portal: Record<string, string>, endpointId: string): Promise<{ secret: string; previousSecret?: string }> {
  const response = await ctx.request({ method: 'GET', url: `${PORTAL_API}/endpoints/${endpointId}/secret`, headers: portal })
  assert.equal(response.status, 200, response.body)
  return response.json()
}

export async function messagesOf(ctx: TestContext, portal: Record<string, string>, endpointId: string, query = ''): Promise<Message[]> {
  const response = await ctx.request({ method: 'GET', url: `${PORTAL_API}/endpoints/${endpointId}/messages${query}`, headers: portal })
  assert.equal(response.status, 200, response.body)
  return response.json<{ messages: Message[] }>().messages
}

export async function attemptsOf(ctx: TestContext, portal: Record<string, string>, endpointId: string, query = ''): Promise<Attempt[]> {
  const response = await ctx.request({ method: 'GET', url: `${PORTAL_API}/endpoints/${endpointId}/attempts${query}`, headers: portal })
  assert.equal(response.status, 200, response.body)
  return response.json<{ attempts: Attempt[] }>().attempts
}

/**
 * Runs the dispatcher and the due delivery jobs until `done` holds (retries wait their schedule's short delays in
 * tests), or fails after `timeoutMs`.
 */
export async function deliverUntil(ctx: TestContext, done: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    await ctx.services.webhooks.dispatch()
    await ctx.services.worker.drain()
    if (await done()) return
    if (Date.now() > deadline) assert.fail('webhook deliveries did not finish in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
