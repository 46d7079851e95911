import type { ApiErrorBody, WidgetError } from './types.ts'

/**
 * The outcome of a call to Tessera's API:
 * - `ok`: a 2xx, with its JSON body;
 * - `refused`: a 4xx, with the error body (`{code, message, details}`);
 * - `offline`: no connectivity: the request failed (fetch rejected) or the server answered a 5xx;
 * - `aborted`: the widget stopped the request itself.
 */
export type ApiResult<T> =
  | { kind: 'ok'; status: number; body: T }
  | { kind: 'refused'; status: number; error: WidgetError }
  | { kind: 'offline'; status?: number; error: WidgetError }
  | { kind: 'aborted' }

export const NETWORK_ERROR: WidgetError = {
  code: 'network_error',
  message: 'The payment service cannot be reached. Check your connection and try again.',
  details: { reason: 'no-connectivity' },
}

/** The error of a non-2xx answer, from its body when it is Tessera's error shape. */
function errorOf(status: number, body: unknown): WidgetError {
  if (typeof body === 'object' && body !== null && typeof (body as ApiErrorBody).code === 'string') {
    const { code, message, details } = body as ApiErrorBody
    const error: WidgetError = { code }
    if (typeof message === 'string') error.message = message
    if (typeof details === 'object' && details !== null) error.details = details
    return error
  }
  return { code: 'unexpected_response', message: `The payment service answered with status ${status}.` }
}

/** Calls Tessera's API with the session's token (`Authorization: Bearer`), never on behalf of anyone else. */
export class Api {
  readonly #base: string
  readonly #token: string
  readonly #abort = new AbortController()

  constructor(base: string, token: string) {
    this.#base = base.replace(/\/+$/, '')
    this.#token = token
  }

  /** Aborts every request under way and every later one. */
  abort(): void {
    this.#abort.abort()
  }

  get<T>(path: string): Promise<ApiResult<T>> {
    return this.request<T>('GET', path)
  }

  post<T>(path: string, body: unknown): Promise<ApiResult<T>> {
    return this.request<T>('POST', path, body)
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { Accept: 'application/json', Authorization: `Bearer ${this.#token}` }
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    let response: Response
    try {
      response = await fetch(`${this.#base}${path}`, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        credentials: 'omit',
        cache: 'no-store',
        signal: this.#abort.signal,
      })
    } catch {
      return this.#abort.signal.aborted ? { kind: 'aborted' } : { kind: 'offline', error: NETWORK_ERROR }
    }
    let parsed: unknown
    try {
      const text = await response.text()
      parsed = text === '' ? undefined : JSON.parse(text)
    } catch {
      if (this.#abort.signal.aborted) return { kind: 'aborted' }
      parsed = undefined
    }
    if (response.status >= 500) return { kind: 'offline', status: response.status, error: NETWORK_ERROR }
    if (response.ok && parsed !== undefined) return { kind: 'ok', status: response.status, body: parsed as T }
    if (response.ok) return { kind: 'refused', status: response.status, error: { code: 'unexpected_response', message: 'The payment service gave an empty answer.' } }
    return { kind: 'refused', status: response.status, error: errorOf(response.status, parsed) }
  }
}
