import type { ApiPolicy } from '../shared/api.ts'

export { Api, apiBase, type ApiResult } from '../shared/api.ts'

/**
 * How the travel-rule widget reads the answers of Tessera's API and of the travel-rule node: an answer in the error
 * shape is `refused` whatever its status (a 503 that says to try again later is shown in the form), and a 2xx without
 * a body is `offline`. Both clients share one `abort`: the widget stops them together.
 */
export function apiPolicy(service: string, abort: AbortController): ApiPolicy {
  return { service, serverErrors: 'refused', emptyAnswer: 'offline', abort }
}
