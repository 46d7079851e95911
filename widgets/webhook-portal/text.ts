import type { Endpoint, Message, MessageStatus, WidgetError } from './types.ts'

/** Why the management link did not open the portal, in words. */
export function linkRefusalText(error: WidgetError): string {
  switch (error.code) {
    case 'link_already_used':
      return 'This management link was already opened. Each link opens the portal once: request a new management link.'
    case 'signature_expired':
      return 'This management link has expired. Request a new management link.'
    case 'signature_invalid':
    case 'request_invalid':
      return 'This management link is not valid: it may have been cut or altered. Copy the whole link, or request a new one.'
    case 'network_error':
      return error.message ?? 'The webhook portal cannot be reached. Check your connection and try again.'
    default:
      return `The management link could not be opened${error.message ? `: ${error.message.replace(/\.$/, '')}` : ''}. Request a new management link.`
  }
}

/** The banner when the page was opened without a link and without a session of this tab. */
export const NO_LINK_TEXT = 'Open the webhook portal with a management link: your server requests one from Tessera (POST /core/webhooks/management-link).'

/** The banner when the session is over (401): nothing more can be done on this page. */
export function sessionEndedText(error: WidgetError): string {
  return error.code === 'token_expired'
    ? 'Your portal session has expired. Open a new management link to continue.'
    : 'Your portal session is not valid any more. Open a new management link to continue.'
}

const RULES: Record<string, string> = {
  format: 'is not in the expected format',
  protocol: 'must start with https:// or http://',
  credentials: 'must not contain a user name or password',
  fragment: 'must not contain a fragment (#…)',
  publicAddress: 'must resolve to public internet addresses only',
  maxLength: 'is too long',
  minLength: 'is required',
  required: 'is required',
  enum: 'is not one of the allowed values',
  range: 'is out of range',
}

const PROPERTIES: Record<string, string> = {
  url: 'The URL',
  description: 'The description',
  eventTypes: 'The event types',
  since: 'The date',
  type: 'The event type',
  graceSeconds: 'The grace period',
}

/** A refusal of an operation, in words: the violations of a `request_invalid`, else the server's message. */
export function refusalText(error: WidgetError): string {
  const violations = Array.isArray(error.details?.violations) ? (error.details.violations as { property?: unknown; rule?: unknown; ruleParams?: Record<string, unknown> }[]) : []
  if (error.code === 'request_invalid' && violations.length > 0) {
    return violations
      .map(({ property, rule, ruleParams }) => {
        const name = String(property ?? '').replace(/^(body\.|\/)/, '')
        const subject = PROPERTIES[name] ?? (name === '' ? 'The request' : `“${name}”`)
        if (name === 'since' && rule === 'range') return `The date must be in the past ${String(ruleParams?.maximumAgeDays ?? 30)} days.`
        return `${subject} ${RULES[String(rule)] ?? `is not valid (${String(rule)})`}.`
      })
      .join(' ')
  }
  if (error.code === 'entity_not_found') return 'It no longer exists: it may have been deleted. Refresh the list.'
  return error.message ? `${error.message.replace(/\.$/, '')}.` : 'Something went wrong. Try again.'
}

/** A time of the API, as the page shows it (UTC, to the second; `zone`: with " UTC" after it). */
export function timeText(iso: string, zone = true): string {
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 19).replace('T', ' ')}${zone ? ' UTC' : ''}`
}

export function endpointStatusText(endpoint: Endpoint): string {
  if (endpoint.status === 'enabled') return 'Enabled'
  const since = endpoint.disabledAt ? ` since ${timeText(endpoint.disabledAt)}` : ''
  return endpoint.disabledReason === 'delivery-failing'
    ? `Disabled${since}: a message failed every attempt`
    : `Disabled by hand${since}`
}

export function eventTypesText(eventTypes: readonly string[]): string {
  return eventTypes.length === 0 ? 'All event types' : eventTypes.join(', ')
}

export const MESSAGE_STATUS_NAMES: Record<MessageStatus, string> = { pending: 'Pending', delivered: 'Delivered', failed: 'Failed' }

export const ORIGIN_NAMES: Record<Message['origin'], string> = { event: 'Event', resend: 'Resend', replay: 'Replay', test: 'Test' }

const ATTEMPT_ERRORS: Record<string, string> = {
  timeout: 'No answer in time',
  'address-refused': 'The address is not allowed',
  'dns-failed': 'The host name could not be resolved',
  'connection-failed': 'The connection failed',
  'tls-failed': 'The TLS handshake failed',
  redirect: 'Answered with a redirect (not followed)',
  'http-status': 'Answered with a status that is not 2xx',
  'url-invalid': 'The URL is not valid',
  'event-missing': 'The event no longer exists',
}

export function attemptErrorText(error: string | undefined): string | undefined {
  return error === undefined ? undefined : (ATTEMPT_ERRORS[error] ?? error)
}
