import { networkError, type ApiPolicy } from '../shared/api.ts'

export { Api, apiBase, type ApiResult } from '../shared/api.ts'

/**
 * How the payment widget reads Tessera's answers: any 5xx is `offline` (its polling counts those and gives up after a
 * few), and a 2xx without a body is refused as `unexpected_response`.
 */
export const API_POLICY: ApiPolicy = { service: 'The payment service', serverErrors: 'offline', emptyAnswer: 'refused' }

export const NETWORK_ERROR = networkError(API_POLICY.service)
