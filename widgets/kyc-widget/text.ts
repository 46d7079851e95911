import type { KycProcess, KycStatus, WidgetError } from './types.ts'

export const PROCESS_NAMES: Record<KycProcess, string> = {
  profile: 'Your details',
  identity: 'Identity document',
  'proof-of-address': 'Proof of address',
}

export const STATUS_NAMES: Record<KycStatus, string> = {
  pending: 'To do',
  running: 'Being checked',
  ok: 'Done',
  failed: 'Not verified',
  exempt: 'Not needed',
}

/** The files a document submission takes, by `input.media[].context`. */
export const MEDIA_LABELS: Record<string, string> = {
  'photo-document-front': 'Front of your identity document',
  'photo-document-back': 'Back of your identity document',
  'photo-selfie': 'A photo of your face (selfie)',
  'photo-selfie-and-document-front': 'A photo of you holding your document',
  video: 'A short video of your face',
  'address-proof': 'A document showing your name and address',
}

/** Why a check failed (`output.reason`), in words. */
const FAILURES: Record<string, string> = {
  'provider-verification-rejected': 'the document could not be verified',
  'data-mismatch': 'the details do not match your profile',
  'address-mismatch': 'the address does not match the one in your profile',
  'name-mismatch': 'the name does not match the one in your profile',
  duplicate: 'this identity is already used by another account',
  underage: 'you must be at least 18 years old',
}

export function failureText(reason: string | undefined): string {
  return FAILURES[reason ?? ''] ?? 'the check did not succeed'
}

/** Refusals of a submission (`details.reasons` of `operation_not_allowed`), in words. */
const REASONS: Record<string, string> = {
  'missing-name': 'Your full name is missing from your details.',
  'missing-birthdate': 'Your date of birth is missing from your details.',
  'incomplete-address': 'Your address is incomplete in your details.',
  'kyc-process-update-not-allowed': 'This verification cannot be changed now.',
  'permission-denied': 'This verification cannot be done here.',
}

/** A refusal of the API, in words; the server's message when nothing better is known. */
export function refusalText(error: WidgetError): string {
  switch (error.code) {
    case 'token_expired':
    case 'token_invalid':
    case 'token_revoked':
    case 'session_invalid':
      return 'This verification session has expired. Please start again.'
    case 'network_error':
      return 'The verification service cannot be reached. Check your connection and try again.'
    case 'service_unavailable':
      return 'The verification service is busy right now. Please try again in a moment.'
    case 'operation_not_allowed': {
      const reasons = Array.isArray(error.details?.reasons) ? (error.details.reasons as unknown[]) : []
      const known = reasons.map((reason) => REASONS[String(reason)]).filter((text) => text !== undefined)
      if (known.length > 0) return known.join(' ')
      break
    }
    case 'entity_not_found':
      if (error.details?.entity === 'file') return 'An uploaded file could not be found. Please choose your files again.'
      break
    case 'file_invalid':
      return 'An upload did not finish. Please try again.'
    case 'content_too_large':
      return 'A file is too large.'
    case 'content_type_unsupported':
    case 'file_content_type_not_allowed':
      return 'A file is not of an accepted type.'
  }
  return error.message ? `${error.message.replace(/\.$/, '')}.` : 'Something went wrong.'
}

/** "JPEG, PNG or PDF" */
export function typesText(types: readonly string[]): string {
  const names = types.map((type) => ({ 'image/jpeg': 'JPEG', 'image/png': 'PNG', 'application/pdf': 'PDF' })[type] ?? type)
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`
}

/** "10 MB" */
export function sizeText(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`
  return `${Math.max(1, Math.round(bytes / 1024))} KB`
}

/** ISO 3166-1 alpha-2 codes: the countries a select offers (named in the browser's language by Intl). */
const COUNTRY_CODES = (
  'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD ' +
  'CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF ' +
  'GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN ' +
  'KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA ' +
  'NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI ' +
  'SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI ' +
  'VN VU WF WS YE YT ZA ZM ZW'
).split(' ')

let countries: { code: string; name: string }[] | undefined

/** The countries, by name. */
export function countryList(): { code: string; name: string }[] {
  if (!countries) {
    const names = new Intl.DisplayNames([navigator.language, 'en'], { type: 'region' })
    countries = COUNTRY_CODES.map((code) => ({ code, name: names.of(code) ?? code })).sort((a, b) => a.name.localeCompare(b.name))
  }
  return countries
}

export function countryName(code: string): string {
  return countryList().find((country) => country.code === code)?.name ?? code
}
