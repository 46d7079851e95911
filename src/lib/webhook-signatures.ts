import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): a message is signed with HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed by the secret's bytes (the base64 after `whsec_`), and sent as
 * `webhook-signature: v1,<base64>`. During a secret rotation the header carries one signature per valid secret,
 * space-separated, so a receiver holding either verifies it.
 */

const PREFIX = 'whsec_'
/** 32 random bytes: the size of the HMAC-SHA256 block's half, as the Standard Webhooks libraries generate them. */
const SECRET_BYTES = 32

export class WebhookSecretInvalid extends Error {}

/** A new signing secret, as receivers configure it: `whsec_` and base64. */
export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`
}

/** The key bytes of a secret; throws `WebhookSecretInvalid` for anything that is not `whsec_` and canonical base64. */
export function webhookSecretKey(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new WebhookSecretInvalid('A webhook secret starts with whsec_')
  const encoded = secret.slice(PREFIX.length)
  const key = Buffer.from(encoded, 'base64')
  if (key.length < 24 || key.toString('base64') !== encoded) throw new WebhookSecretInvalid('A webhook secret is whsec_ and the base64 of at least 24 bytes')
  return key
}

/** The `webhook-id` of an event's message: the same on every attempt and every replay, so receivers can deduplicate. */
export function webhookMessageId(eventId: string): string {
  return `msg_${eventId.replace(/-/g, '')}`
}

export interface WebhookMessage {
  id: string
  /** Seconds since the Unix epoch. */
  timestamp: number
  /** The exact bytes sent as the body. */
  body: string
}

/**
 * A secret ready to sign with: preparing the HMAC key once saves most of the cost of each signature when one secret
 * signs many messages.
 */
export function webhookSigningKey(secret: string): KeyObject {
  return createSecretKey(webhookSecretKey(secret))
}

/**
 * The `webhook-signature` value: a `v1,<base64>` signature per secret (as text, or prepared by `webhookSigningKey`),
 * in the order given, space-separated.
 */
export function signWebhook(message: WebhookMessage, secrets: readonly (string | KeyObject)[]): string {
  if (secrets.length === 0) throw new WebhookSecretInvalid('A message is signed with at least one secret')
  if (!Number.isSafeInteger(message.timestamp) || message.timestamp < 0) throw new RangeError('A webhook timestamp is whole seconds since the epoch')
  const signed = `${message.id}.${message.timestamp}.${message.body}`
  return secrets.map((secret) => `v1,${createHmac('sha256', typeof secret === 'string' ? webhookSecretKey(secret) : secret).update(signed).digest('base64')}`).join(' ')
}

/** The three headers of a signed message. */
export function webhookHeaders(message: WebhookMessage, secrets: readonly (string | KeyObject)[]): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return { 'webhook-id': message.id, 'webhook-timestamp': String(message.timestamp), 'webhook-signature': signWebhook(message, secrets) }
}
