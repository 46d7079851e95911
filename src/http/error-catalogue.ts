import type { ErrorCode } from '../lib/errors.ts'

export interface CatalogueEntry {
  status: number
  /** When the API answers with this code, for the error reference (docs/errors.md is generated from it). */
  description: string
}

/**
 * Every error code the API can answer, with its HTTP status: the one place that maps domain refusals to
 * HTTP. `satisfies` makes the compiler refuse a domain error code without an entry here.
 */
export const ERROR_CATALOGUE = {
  request_invalid: { status: 400, description: 'The request has missing or invalid parameters; `details.violations` lists them.' },
  token_invalid: { status: 401, description: 'The access token is missing, malformed, or not signed by this deployment.' },
  token_expired: { status: 401, description: 'The access token has expired; request a new one.' },
  token_revoked: { status: 401, description: 'The client of the access token was revoked.' },
  token_insufficient_scopes: { status: 403, description: 'The access token lacks a scope the operation requires; `details.security` lists them.' },
  subject_not_allowed: { status: 403, description: 'The operation does not allow the subject the token acts as (client, individual or business user).' },
  signature_invalid: { status: 403, description: 'A signed upload form or download link was altered, was not issued by this deployment, or belongs to another file; or a provider callback is not signed by the provider.' },
  signature_expired: { status: 403, description: 'A signed upload form or download link has expired; `details.expiredAt` says when.' },
  entity_not_found: { status: 404, description: 'The entity does not exist, or belongs to another user or organization; `details.entity` names it.' },
  route_not_found: { status: 404, description: 'No operation answers this method and path.' },
  precondition_failed: { status: 412, description: 'An `If-Match` or `If-None-Match` precondition does not hold.' },
  request_timeout: { status: 408, description: 'The request line, header fields or body did not arrive in time; the connection is closed.' },
  content_too_large: { status: 413, description: 'The body or the metadata is larger than allowed; `details.threshold` gives the limit.' },
  headers_too_large: { status: 431, description: 'The request line and header fields are larger than allowed; `details.threshold` gives the limit.' },
  content_type_unsupported: { status: 415, description: 'The request body has a content type the operation does not take.' },
  idempotency_key_reused: { status: 422, description: 'The `Idempotency-Key` was already used with a different request.' },
  json_patch_failed: { status: 422, description: 'A JSON Patch operation could not be applied (a failed `test`, a missing path).' },
  too_many_requests: { status: 429, description: 'The client sent too many requests; retry after `Retry-After` seconds.' },
  internal_error: { status: 500, description: 'An unexpected failure; report the request id.' },
  service_unavailable: { status: 503, description: 'A temporary failure (a concurrent change, a provider unreachable); retry after `Retry-After` seconds.' },
  conflict: { status: 409, description: 'The request conflicts with an existing entity.' },
  link_already_used: { status: 410, description: 'The webhook management link was already opened: each opens the portal once; request a new one.' },
  webhook_endpoints_limit_exceeded: { status: 409, description: 'The organization has as many webhook endpoints as allowed; `details.threshold` gives the limit.' },
  idempotency_request_in_progress: { status: 409, description: 'A request with the same `Idempotency-Key` is still being processed.' },
  account_archived: { status: 409, description: 'The account is archived and takes no movements.' },
  account_has_balance: { status: 409, description: 'The account still holds money and cannot be archived.' },
  account_has_pending_transactions: { status: 409, description: 'The account has movements in flight and cannot be archived.' },
  asset_feature_not_available: { status: 409, description: 'The asset does not offer the feature (buy, sell, transfer, …) to this user; `details.feature` names it.' },
  asset_not_supported: { status: 409, description: 'The asset exists but cannot be used here (no price, delisted, not held by the account).' },
  card_type_not_allowed: { status: 409, description: 'The card\'s type (`credit`, `debit`) cannot be linked for the user\'s currency; `details.type` names it.' },
  country_not_supported: { status: 409, description: 'The country is not supported for this use.' },
  duplicate: { status: 409, description: 'The same details are already linked for the user; `details.property` names the identifying field.' },
  crypto_address_invalid: { status: 409, description: 'The crypto address, or its destination tag or memo, is not valid on the network.' },
  crypto_address_signature_invalid: { status: 409, description: 'A signature given to verify a crypto address does not prove control of it (altered, by another key, for another message or network); `details.reason` says why.' },
  date_invalid: { status: 409, description: 'A date is out of the allowed range (e.g. a birthdate in the future).' },
  email_already_exists: { status: 409, description: 'Another user of the organization has this email address.' },
  file_already_uploaded: { status: 409, description: 'The file already has its content.' },
  file_content_type_not_allowed: { status: 409, description: 'The file category does not take this content type.' },
  file_invalid: { status: 409, description: 'A file the request refers to has no content yet (it is still `pending`); `details.fileId` names it.' },
  hold_not_open: { status: 409, description: 'The hold was already released or captured.' },
  insufficient_balance: { status: 409, description: 'The origin account does not have enough available balance for the movement.' },
  invalid_number: { status: 409, description: 'A number given for a bank account or card is not valid.' },
  ledger_reference_reused: { status: 409, description: 'A ledger reference was already used for a different movement.' },
  locale_invalid: { status: 409, description: 'The locale is not a supported language tag.' },
  max_files_limit_exceeded: { status: 409, description: 'The user has as many files as allowed.' },
  postal_code_invalid: { status: 409, description: 'The postal code is not valid for the address\'s country.' },
  number_invalid: { status: 409, description: 'A number is not valid: outside its allowed range (`details.threshold` gives the limit), or failing its checksum (a card, routing or account number, an IBAN or BIC; `details.property` names it).' },
  operation_not_allowed: { status: 409, description: 'The operation is not allowed now; `details.reasons` says why.' },
  phone_already_exists: { status: 409, description: 'Another user of the organization has this phone number.' },
  phone_invalid: { status: 409, description: 'The phone number is not valid for its country.' },
  po_boxes_not_allowed: { status: 409, description: 'A post-office box is not accepted as a residential address.' },
  rail_feature_not_available: { status: 409, description: 'The rail does not offer this feature (deposits, withdrawals).' },
  remitter_and_recipient_cannot_match: { status: 409, description: 'A simulated transfer names the same party on both ends.' },
  terms_of_service_mismatch: { status: 409, description: 'A new user\'s general terms of service are not those of their country of residence; `details.allowedValues` lists the ones that are.' },
  subdivision_not_supported: { status: 409, description: 'The subdivision is not supported for this use.' },
  transaction_amount_invalid: { status: 409, description: 'The amount is malformed, has too many decimals, or is outside the limits; `details.rule` says which.' },
  transaction_node_invalid: { status: 409, description: 'The origin or destination cannot take part in this movement (the same account on both ends, a node without the feature).' },
  transaction_reference_reused: { status: 409, description: 'A rail reference was already recorded for a different deposit.' },
  user_capability_failure: { status: 409, description: 'The user\'s capabilities do not allow the movement; `details.capability` lists what is missing.' },
} as const satisfies Record<ErrorCode, CatalogueEntry>

export type CatalogueCode = keyof typeof ERROR_CATALOGUE

/** The status of a code; codes outside the catalogue are a bug, answered as 500. */
export function statusOf(code: string): number {
  return (ERROR_CATALOGUE as Record<string, CatalogueEntry>)[code]?.status ?? 500
}
