import { Ajv, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import { toViolations, type SchemaError } from '../../http/violations.ts'
import type { Violation } from '../../lib/errors.ts'

/**
 * Form-based KYC processes (self-categorization, due diligence, tax details) are questionnaires served as a JSON
 * Schema with a JSON Forms uiSchema. A form has categories answered one at a time; the hint serves the
 * categories still unanswered, and answers are validated against exactly that schema, so that a client's own
 * validator and the server agree.
 */

export const FORM_LOCALES = ['en', 'fr'] as const
export type FormLocale = (typeof FORM_LOCALES)[number]
export const DEFAULT_FORM_LOCALE: FormLocale = 'en'

/** Text of one language; English has every key, another language falls back to English key by key. */
export type Texts = Record<string, string>

export interface FormCategory {
  /** The property of `answers` this category fills, e.g. `investor-profile`. */
  key: string
  /** JSON Schema of the category's answers (an object), with texts looked up through `t`. */
  schema: (t: (key: string) => string) => Record<string, unknown>
  /** The JSON Forms `Category` of this category. */
  uiSchema: (t: (key: string) => string) => Record<string, unknown>
}

export interface FormReview {
  approved: boolean
  /** Customer due diligence scores the user's risk. */
  score?: 'low' | 'medium' | 'high'
}

export interface FormDefinition {
  /** Stable per version of the questions: a client answering an older version is told so. */
  id: string
  categories: readonly FormCategory[]
  texts: Partial<Record<FormLocale, Texts>> & { en: Texts }
  /** Attempts a user has to complete the form acceptably. */
  maxAttempts: number
  /** How long after a rejected attempt the next one may start (`output.attempts.retryAt`); none when absent. */
  retryDelayMs?: number
  /** The deterministic review of a complete, valid set of answers. */
  review: (answers: Readonly<Record<string, unknown>>) => FormReview
}

export interface FormHint {
  type: 'form'
  formId: string
  schema: Record<string, unknown>
  uiSchema: Record<string, unknown>
}

function translator(form: FormDefinition, locale: FormLocale): (key: string) => string {
  const texts = form.texts[locale] ?? {}
  return (key) => texts[key] ?? form.texts.en[key] ?? key
}

/** The schema of the categories not answered yet: any of them may be answered next, one per request. */
export function remainingSchema(form: FormDefinition, answered: readonly string[], locale: FormLocale = DEFAULT_FORM_LOCALE): Record<string, unknown> {
  const t = translator(form, locale)
  const remaining = form.categories.filter((c) => !answered.includes(c.key))
  return {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(remaining.map((c) => [c.key, c.schema(t)])),
  }
}

export function hintOf(form: FormDefinition, answered: readonly string[], locale: FormLocale): FormHint {
  const t = translator(form, locale)
  const remaining = form.categories.filter((c) => !answered.includes(c.key))
  return {
    type: 'form',
    formId: form.id,
    schema: remainingSchema(form, answered, locale),
    uiSchema: { type: 'Categorization', elements: remaining.map((c) => c.uiSchema(t)) },
  }
}

export function isComplete(form: FormDefinition, answered: readonly string[]): boolean {
  return form.categories.every((c) => answered.includes(c.key))
}

// `verbose` keeps each failing subschema, so that a forbidden answer can be named (see `namedForbidden`).
const ajv = new Ajv({ allErrors: true, strict: false, verbose: true })
addFormats.default(ajv)
const compiled = new Map<string, ValidateFunction>()

/**
 * Violations of `answers` against the schema the hint serves (the unanswered categories), with properties
 * named from the request body (`input.answers.<category>.<question>`).
 */
export function answerViolations(form: FormDefinition, answered: readonly string[], answers: unknown): Violation[] {
  const key = `${form.id}:${[...answered].sort().join(',')}`
  let validate = compiled.get(key)
  if (!validate) {
    validate = ajv.compile(remainingSchema(form, answered))
    compiled.set(key, validate)
  }
  if (validate(answers)) return []
  return toViolations((validate.errors ?? []).map(namedForbidden) as SchemaError[]).map((v) => ({
    ...v,
    property: v.property === '' ? 'input.answers' : `input.answers.${v.property}`,
  }))
}

/** `not: {required: [x]}` fails on the object; the violation is about `x`, which must not be answered. */
function namedForbidden<E extends { keyword: string; instancePath: string; schema?: unknown }>(error: E): E {
  const required = (error.schema as { required?: unknown } | undefined)?.required
  if (error.keyword !== 'not' || !Array.isArray(required) || required.length !== 1) return error
  return { ...error, instancePath: `${error.instancePath}/${String(required[0]).replace(/~/g, '~0').replace(/\//g, '~1')}` }
}

/**
 * The language of a form from `Accept-Language` (RFC 9110): the most preferred language this service has, else
 * English. Returns null when the header is malformed.
 */
export function negotiateFormLocale(header: string | undefined): FormLocale | null {
  if (header === undefined || header.trim() === '') return DEFAULT_FORM_LOCALE
  const ranges: { tag: string; q: number; order: number }[] = []
  for (const [order, part] of header.split(',').entries()) {
    const match = /^\s*([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?))?\s*$/.exec(part)
    if (!match) return null
    ranges.push({ tag: match[1]!.toLowerCase(), q: match[2] === undefined ? 1 : Number(match[2]), order })
  }
  ranges.sort((a, b) => b.q - a.q || a.order - b.order)
  for (const range of ranges) {
    if (range.q === 0) continue
    const language = range.tag.split('-')[0]
    const found = FORM_LOCALES.find((l) => l === language)
    if (found) return found
  }
  return DEFAULT_FORM_LOCALE
}
