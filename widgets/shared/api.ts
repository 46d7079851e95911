import type { WidgetError } from './types.ts'

/**
 * The outcome of a call to Tessera's API (or to another service a widget reaches with a bearer token):
 * - `ok`: a 2xx, with its JSON body;
 * - `refused`: an answer in the `{code, message, details}` error shape, or a 4xx that is not in it
 *   (`unexpected_response`);
 * - `offline`: no connectivity (fetch rejected), or a 5xx (see `ApiPolicy` for one in the error shape);
 * - `aborted`: the widget stopped the request itself.
 */
export type ApiResult<T> =
  | { kind: 'ok'; status: number; body: T }
  | { kind: 'refused'; status: number; error: WidgetError }
  | { kind: 'offline'; status?: number; error: WidgetError }
  | { kind: 'aborted' }

/**
 * How a widget reads the answers that are not plainly a success or a refusal. The widgets differ here on purpose:
 * what each does next depends on it (the payment widget's polling counts `offline` answers and gives up after a few;
 * the KYC widget's signed upload answers 204; the travel-rule widget shows a busy node's 503 in the form).
 */
export interface ApiPolicy {
  /** Names the service in the messages the user may see: "The payment service" (… cannot be reached). */
  service: string
  /**
   * A 5xx in the error shape: `refused`, with the server's error (a 503 that says to try again later), or
   * `offline`, like any other 5xx.
   */
  serverErrors: 'refused' | 'offline'
  /**
   * A 2xx with no body: `ok` (with `undefined`: a 204 is expected), `refused` (`unexpected_response`) or
   * `offline`.
   */
  emptyAnswer: 'ok' | 'refused' | 'offline'
  /** Aborts the requests of every client given it; by default each client has its own. */
  abort?: AbortController
}

/** The error of a widget that cannot reach `service`. */
export function networkError(service: string): WidgetError {
  return { code: 'network_error', message: `${service} cannot be reached. Check your connection and try again.`, details: { reason: 'no-connectivity' } }
}

/** Tessera's API: the `<meta name="tessera-api-base">` of the page, or the page's own origin. */
export function apiBase(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="tessera-api-base"]')?.content
  return meta && meta.trim() !== '' ? meta.trim() : location.origin
}

/** The error in a body of the `{code, message, details}` shape, or undefined when it is not one. */
function errorOf(body: unknown): WidgetError | undefined {
  if (typeof body !== 'object' || body === null || typeof (body as WidgetError).code !== 'string') return undefined
  const { code, message, details } = body as WidgetError
  const error: WidgetError = { code }
  if (typeof message === 'string') error.message = message
  if (typeof details === 'object' && details !== null) error.details = details
  return error
}

/** Calls one service with one bearer token (Tessera's API with the session's token, never on behalf of anyone else). No cookies, no cache. */
export class Api {
  readonly #base: string
  readonly #token: string
  readonly #policy: ApiPolicy
  readonly #abort: AbortController

  constructor(base: string, token: string, policy: ApiPolicy) {
    this.#base = base.replace(/\/+$/, '')
    this.#token = token
    this.#policy = policy
    this.#abort = policy.abort ?? new AbortController()
  }

  /** Aborts every request under way and every later one (of every client sharing the policy's `abort`). */
  abort(): void {
    this.#abort.abort()
  }

  get<T>(path: string): Promise<ApiResult<T>> {
    return this.request<T>('GET', path)
  }

  post<T>(path: string, body: unknown): Promise<ApiResult<T>> {
    return this.request<T>('POST', path, body)
  }

  put<T>(path: string, body: unknown): Promise<ApiResult<T>> {
    return this.request<T>('PUT', path, body)
  }

  patch<T>(path: string, body: unknown): Promise<ApiResult<T>> {
    return this.request<T>('PATCH', path, body)
  }

  /** A JSON request to a path of the service, with the token. */
  request<T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { Accept: 'application/json', Authorization: `Bearer ${this.#token}` }
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    return this.send<T>(`${this.#base}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) })
  }

  /** Any request (`init` as given: no token unless it has one), its answer read by the policy. */
  async send<T>(url: string, init: RequestInit): Promise<ApiResult<T>> {
    const { service, serverErrors, emptyAnswer } = this.#policy
    let response: Response
    try {
      response = await fetch(url, { ...init, credentials: 'omit', cache: 'no-store', signal: this.#abort.signal })
    } catch {
      return this.#abort.signal.aborted ? { kind: 'aborted' } : { kind: 'offline', error: networkError(service) }
    }
    let parsed: unknown
    try {
      const text = await response.text()
      parsed = text === '' ? undefined : JSON.parse(text)
    } catch {
      if (this.#abort.signal.aborted) return { kind: 'aborted' }
      parsed = undefined
    }
    const { status } = response
    if (response.ok) {
      if (parsed !== undefined || emptyAnswer === 'ok') return { kind: 'ok', status, body: parsed as T }
      if (emptyAnswer === 'offline') return { kind: 'offline', status, error: networkError(service) }
      return { kind: 'refused', status, error: { code: 'unexpected_response', message: `${service} gave an empty answer.` } }
    }
    const error = errorOf(parsed)
    if (status >= 500 && (error === undefined || serverErrors === 'offline')) return { kind: 'offline', status, error: networkError(service) }
    if (error) return { kind: 'refused', status, error }
    return { kind: 'refused', status, error: { code: 'unexpected_response', message: `${service} answered with status ${status}.` } }
  }
}
