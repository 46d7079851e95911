import { Ajv, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import { toViolations, type SchemaError } from '../../http/violations.ts'
import type { Violation } from '../../lib/errors.ts'
import type { FormHint, FormLocale, Texts } from './forms.ts'

/**
 * The profile as a form: the deprecated way of declaring it (`input.details`, answering the `hint` the profile
 * serves while it is pending), kept for clients written against it. The flat fields and `verification.rules` are
 * the current way; both go through the same rules. The form holds the fields an update may change (`editable`,
 * not `disallowed`), and requires those the profile still lacks, so that a client validating `details` with the
 * hint's schema and the server agree.
 */

/** Stable per version of the form's fields. */
export const PROFILE_FORM_ID = '3c9e7a52-8d1f-4b6e-a0c4-5f2d9b7e1a83'

export interface ProfileRule {
  presence: 'required' | 'optional' | 'disallowed'
  editable: boolean
}

export interface ProfileRules {
  fullName: ProfileRule
  birthdate: ProfileRule
  birthplace: ProfileRule & { rules: { country: ProfileRule; town: ProfileRule } }
  /** Deprecated alias of `primaryCitizenship`, with its rule. */
  citizenshipCountry: ProfileRule
  primaryCitizenship: ProfileRule
  otherCitizenships: ProfileRule
  address: ProfileRule & { rules: { subdivision: ProfileRule; city: ProfileRule; line1: ProfileRule; line2: ProfileRule; postalCode: ProfileRule } }
}

/** The declared profile, as the profile process shows it in `input`. */
export interface DeclaredProfile {
  fullName?: string
  birthdate?: string
  birthplace?: { country: string; town: string }
  primaryCitizenship?: string
  otherCitizenships?: string[]
  address?: { country: string; subdivision?: string; city?: string; line1?: string; line2?: string; postalCode?: string }
}

const TOP_FIELDS = ['fullName', 'birthdate', 'birthplace', 'primaryCitizenship', 'otherCitizenships'] as const
const ADDRESS_FIELDS = ['subdivision', 'city', 'line1', 'line2', 'postalCode'] as const

const TEXTS: { en: Texts } & Partial<Record<FormLocale, Texts>> = {
  en: {
    'personal.title': 'Personal details',
    'address.title': 'Address of residence',
    fullName: 'Full legal name',
    birthdate: 'Date of birth',
    birthplace: 'Place of birth',
    'birthplace.country': 'Country of birth',
    'birthplace.town': 'Town of birth',
    primaryCitizenship: 'Citizenship',
    otherCitizenships: 'Other citizenships',
    'address.subdivision': 'Region',
    'address.city': 'City',
    'address.line1': 'Address line 1',
    'address.line2': 'Address line 2',
    'address.postalCode': 'Postal code',
  },
  fr: {
    'personal.title': 'Informations personnelles',
    'address.title': 'Adresse de résidence',
    fullName: 'Nom complet',
    birthdate: 'Date de naissance',
    birthplace: 'Lieu de naissance',
    'birthplace.country': 'Pays de naissance',
    'birthplace.town': 'Ville de naissance',
    primaryCitizenship: 'Nationalité',
    otherCitizenships: 'Autres nationalités',
    'address.subdivision': 'Région',
    'address.city': 'Ville',
    'address.line1': 'Adresse, ligne 1',
    'address.line2': 'Adresse, ligne 2',
    'address.postalCode': 'Code postal',
  },
}

const NO_EDGE_SPACES = '^\\S.*\\S$|^\\S$'
const COUNTRY = '^[A-Z]{2}$'

const asked = (rule: ProfileRule) => rule.editable && rule.presence !== 'disallowed'
const text = (title: string, maxLength: number) => ({ type: 'string', title, pattern: NO_EDGE_SPACES, maxLength })

function addressComplete(address: DeclaredProfile['address']): boolean {
  return Boolean(address?.city && address.line1 && address.postalCode)
}

/** The JSON Schema of `details`: the fields an update may change, requiring the required ones still missing. */
export function profileFormSchema(rules: ProfileRules, declared: DeclaredProfile, locale: FormLocale = 'en'): Record<string, unknown> {
  const t = (key: string) => TEXTS[locale]?.[key] ?? TEXTS.en[key] ?? key
  const properties: Record<string, unknown> = {}
  const required: string[] = []
  const missing = (field: (typeof TOP_FIELDS)[number]) => rules[field].presence === 'required' && declared[field] === undefined
  if (asked(rules.fullName)) properties.fullName = { type: 'string', title: t('fullName'), pattern: '^\\S+\\s+\\S+(\\s+\\S+)*$', maxLength: 200 }
  if (asked(rules.birthdate)) properties.birthdate = { type: 'string', title: t('birthdate'), format: 'date' }
  if (asked(rules.birthplace)) {
    properties.birthplace = {
      type: 'object',
      title: t('birthplace'),
      additionalProperties: false,
      properties: {
        country: { type: 'string', title: t('birthplace.country'), pattern: COUNTRY },
        town: { ...text(t('birthplace.town'), 100), minLength: 1 },
      },
      required: ['country', 'town'],
    }
  }
  if (asked(rules.primaryCitizenship)) properties.primaryCitizenship = { type: 'string', title: t('primaryCitizenship'), pattern: COUNTRY }
  if (asked(rules.otherCitizenships)) {
    properties.otherCitizenships = { type: 'array', title: t('otherCitizenships'), items: { type: 'string', pattern: COUNTRY }, maxItems: 10, uniqueItems: true }
  }
  for (const field of TOP_FIELDS) if (field in properties && missing(field)) required.push(field)

  if (asked(rules.address)) {
    const address: Record<string, unknown> = {}
    const addressRequired: string[] = []
    const declaredAddress = declared.address ?? { country: '' }
    for (const field of ADDRESS_FIELDS) {
      const rule = rules.address.rules[field]
      if (!asked(rule)) continue
      const title = t(`address.${field}`)
      address[field] =
        field === 'subdivision'
          ? { type: 'string', title, pattern: '^[A-Z]{2}-[A-Z0-9]{1,3}$' }
          : field === 'line2'
            ? { type: ['string', 'null'], title, pattern: NO_EDGE_SPACES, maxLength: 100 }
            : text(title, field === 'line1' ? 150 : field === 'city' ? 100 : 20)
      if (rule.presence === 'required' && declaredAddress[field] === undefined) addressRequired.push(field)
    }
    if (Object.keys(address).length > 0) {
      properties.address = {
        type: 'object',
        title: t('address.title'),
        additionalProperties: false,
        minProperties: 1,
        properties: address,
        ...(addressRequired.length > 0 ? { required: addressRequired } : {}),
      }
      if (rules.address.presence === 'required' && !addressComplete(declared.address)) required.push('address')
    }
  }
  return { type: 'object', additionalProperties: false, minProperties: 1, properties, ...(required.length > 0 ? { required } : {}) }
}

function control(scope: string, label?: string): Record<string, unknown> {
  return label === undefined ? { type: 'Control', scope } : { type: 'Control', scope, label }
}

/** The deprecated form hint of a pending profile: the schema of `details` and its JSON Forms layout. */
export function profileFormHint(rules: ProfileRules, declared: DeclaredProfile, locale: FormLocale): FormHint {
  const schema = profileFormSchema(rules, declared, locale)
  const t = (key: string) => TEXTS[locale]?.[key] ?? TEXTS.en[key] ?? key
  const properties = schema.properties as Record<string, { properties?: Record<string, unknown> }>
  const personal = TOP_FIELDS.filter((field) => field in properties).map((field) =>
    field === 'birthplace'
      ? {
          type: 'Group',
          label: t('birthplace'),
          elements: [control('#/properties/birthplace/properties/country'), control('#/properties/birthplace/properties/town')],
        }
      : control(`#/properties/${field}`),
  )
  const address = Object.keys(properties.address?.properties ?? {}).map((field) => control(`#/properties/address/properties/${field}`))
  const elements = [
    ...(personal.length > 0 ? [{ type: 'Category', label: t('personal.title'), elements: personal }] : []),
    ...(address.length > 0 ? [{ type: 'Category', label: t('address.title'), elements: address }] : []),
  ]
  return { type: 'form', formId: PROFILE_FORM_ID, schema, uiSchema: { type: 'Categorization', elements } }
}

const ajv = new Ajv({ allErrors: true, strict: false })
addFormats.default(ajv)
const compiled = new Map<string, ValidateFunction>()

/** Violations of `details` against the schema the hint serves, named from the request body (`input.details.…`). */
export function detailsViolations(rules: ProfileRules, declared: DeclaredProfile, details: unknown): Violation[] {
  const schema = profileFormSchema(rules, declared)
  const key = JSON.stringify(schema)
  let validate = compiled.get(key)
  if (!validate) {
    validate = ajv.compile(schema)
    compiled.set(key, validate)
  }
  if (validate(details)) return []
  return toViolations((validate.errors ?? []) as SchemaError[]).map((v) => ({ ...v, property: v.property === '' ? 'input.details' : `input.details.${v.property}` }))
}
