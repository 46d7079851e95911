import { Api, type ApiPolicy, type ApiResult } from '../shared/api.ts'
import type { Attempt, Endpoint, EndpointInput, EventType, Message, MessageStatus, PortalSession, Replay, Secrets, WidgetError } from './types.ts'

export { apiBase, type ApiResult } from '../shared/api.ts'

const PORTAL = '/hosted/webhooks/api'

/**
 * How the portal reads the answers: an answer in the error shape is `refused` whatever its status (its message is
 * shown), and a 2xx without a body is `ok` (a deleted endpoint answers 204).
 */
const POLICY: ApiPolicy = { service: 'The webhook portal', serverErrors: 'refused', emptyAnswer: 'ok' }

/** Whether a refusal means the portal session is over (bad or expired token): only a new management link helps. */
export function sessionEnded(error: WidgetError): boolean {
  return error.code === 'token_invalid' || error.code === 'token_expired'
}

/** Exchanges the management link (the `link` of the page's fragment) for a portal session: once per link. */
export function openSession(base: string, link: string): Promise<ApiResult<{ session: PortalSession }>> {
  return new Api(base, '', POLICY).send(`${base.replace(/\/+$/, '')}${PORTAL}/sessions`, {
    method: 'POST',
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify({ link }),
  })
}

const segment = encodeURIComponent

/**
 * The portal's operations with the session's token. A refusal that ends the session (401) is also handed to
 * `onSessionEnded`, once, so that the page can put everything away and say what to do.
 */
export class PortalApi {
  readonly #api: Api
  readonly #onSessionEnded: (error: WidgetError) => void
  #ended = false

  constructor(base: string, token: string, onSessionEnded: (error: WidgetError) => void) {
    this.#api = new Api(base, token, POLICY)
    this.#onSessionEnded = onSessionEnded
  }

  async #call<T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
    if (this.#ended) return { kind: 'aborted' }
    const result = await this.#api.request<T>(method, `${PORTAL}${path}`, body)
    if (result.kind === 'refused' && result.status === 401 && sessionEnded(result.error)) {
      this.#ended = true
      this.#api.abort()
      this.#onSessionEnded(result.error)
      return { kind: 'aborted' }
    }
    return result
  }

  eventTypes(): Promise<ApiResult<{ eventTypes: EventType[] }>> {
    return this.#call('GET', '/event-types')
  }

  endpoints(): Promise<ApiResult<{ endpoints: Endpoint[] }>> {
    return this.#call('GET', '/endpoints')
  }

  endpoint(id: string): Promise<ApiResult<{ endpoint: Endpoint }>> {
    return this.#call('GET', `/endpoints/${segment(id)}`)
  }

  createEndpoint(input: EndpointInput): Promise<ApiResult<{ endpoint: Endpoint }>> {
    return this.#call('POST', '/endpoints', input)
  }

  updateEndpoint(id: string, changes: Partial<EndpointInput> & { enabled?: boolean }): Promise<ApiResult<{ endpoint: Endpoint }>> {
    return this.#call('PATCH', `/endpoints/${segment(id)}`, changes)
  }

  deleteEndpoint(id: string): Promise<ApiResult<undefined>> {
    return this.#call('DELETE', `/endpoints/${segment(id)}`)
  }

  secret(id: string): Promise<ApiResult<Secrets>> {
    return this.#call('GET', `/endpoints/${segment(id)}/secret`)
  }

  /** `graceSeconds` undefined: the deployment's default grace period. */
  rotateSecret(id: string, graceSeconds: number | undefined): Promise<ApiResult<Secrets>> {
    return this.#call('POST', `/endpoints/${segment(id)}/secret/rotate`, graceSeconds === undefined ? {} : { graceSeconds })
  }

  messages(id: string, status: MessageStatus | '', limit = 50): Promise<ApiResult<{ messages: Message[] }>> {
    const query = new URLSearchParams({ limit: String(limit) })
    if (status !== '') query.set('status', status)
    return this.#call('GET', `/endpoints/${segment(id)}/messages?${query}`)
  }

  /** The endpoint's attempts, newest first: of one message, or of all of them. */
  attempts(id: string, messageId?: string, limit = 50): Promise<ApiResult<{ attempts: Attempt[] }>> {
    const query = new URLSearchParams({ limit: String(limit) })
    if (messageId !== undefined) query.set('messageId', messageId)
    return this.#call('GET', `/endpoints/${segment(id)}/attempts?${query}`)
  }

  resend(id: string, messageId: string): Promise<ApiResult<{ message: Message }>> {
    return this.#call('POST', `/endpoints/${segment(id)}/messages/${segment(messageId)}/resend`)
  }

  replay(id: string, since: string): Promise<ApiResult<{ replay: Replay }>> {
    return this.#call('POST', `/endpoints/${segment(id)}/replay`, { since })
  }

  sendTest(id: string, type: string): Promise<ApiResult<{ message: Message }>> {
    return this.#call('POST', `/endpoints/${segment(id)}/test`, { type })
  }
}
