import { parsePhoneNumberFromString } from 'libphonenumber-js/max'
import { isUniqueViolation } from '../../db/errors.ts'
import type { Db, KycProcessRow, Tx } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import type { Schedules } from '../../jobs/schedules.ts'
import { conflict, DomainError, notFound, operationNotAllowed, requestInvalid } from '../../lib/errors.ts'
import type { EvidenceFile, KycProvider, PersonData, PostalAddress } from '../../providers/kyc/kyc-provider.ts'
import { recordEvent } from '../events/index.ts'
import type { CountriesService } from '../reference/index.ts'
import { checkBirthdate, checkPastTimestamp, type Profile, type UsersService } from '../users/index.ts'
import { CRYPTO_RISK_ASSESSMENT_FORM, CUSTOMER_DUE_DILIGENCE_FORM, TAX_DETAILS_FORM } from './due-diligence-forms.ts'
import { answerViolations, DEFAULT_FORM_LOCALE, hintOf, isComplete, negotiateFormLocale, type FormDefinition, type FormLocale } from './forms.ts'
import { detailsViolations, profileFormHint, type ProfileRule, type ProfileRules } from './profile-form.ts'
import {
  initialStatus,
  KYC_PROCESS_CODES,
  KYC_PROCESSES,
  PROCESS_KINDS,
  summarize,
  transition,
  type DeclaredFacts,
  type KycEvent,
  type KycProcessCode,
  type KycProcessKey,
  type KycRefusal,
  type KycStatus,
  type KycSummary,
} from './kyc.machine.ts'
import * as repository from './kyc.repository.ts'
import type {
  KycOverview,
  UpdateAddressBody,
  UpdateCryptoRiskAssessmentBody,
  UpdateCustomerDueDiligenceBody,
  UpdateEmailBody,
  UpdateEnhancedDueDiligenceBody,
  UpdateIdentityBody,
  UpdatePhoneBody,
  UpdateProfileBody,
  UpdateProofOfAddressBody,
  UpdateSelfCategorizationBody,
  UpdateTaxDetailsBody,
} from './kyc.schemas.ts'
import { SELF_CATEGORIZATION_EXPIRY_SCHEDULE, SELF_CATEGORIZATION_FORM, statementExpired } from './self-categorization.ts'

/** The files module's check that a file was uploaded by the user: 404 when unknown or foreign, 409 while pending. */
export interface UploadedFiles {
  requireUploadedFile(organizationId: string, userId: string, fileId: string): Promise<{ id: string; category: string; contentType: string }>
}

type Model = 'none' | 'partner-verified' | 'service-verified'
type FormCode = 'customer-due-diligence' | 'crypto-risk-assessment' | 'self-categorization-statement' | 'tax-details'
type JsonObject = Record<string, unknown>

const FORMS: Record<FormCode, FormDefinition> = {
  'customer-due-diligence': CUSTOMER_DUE_DILIGENCE_FORM,
  'crypto-risk-assessment': CRYPTO_RISK_ASSESSMENT_FORM,
  'self-categorization-statement': SELF_CATEGORIZATION_FORM,
  'tax-details': TAX_DETAILS_FORM,
}
const isFormCode = (code: KycProcessCode): code is FormCode => Object.hasOwn(FORMS, code)

const DEFAULT_MODELS: Record<KycProcessCode, Model> = {
  profile: 'none',
  address: 'none',
  email: 'partner-verified',
  phone: 'partner-verified',
  identity: 'partner-verified',
  'proof-of-address': 'partner-verified',
  'customer-due-diligence': 'service-verified',
  'enhanced-due-diligence': 'partner-verified',
  'crypto-risk-assessment': 'service-verified',
  'self-categorization-statement': 'service-verified',
  'tax-details': 'service-verified',
  screening: 'service-verified',
  risk: 'service-verified',
}

const DEPENDENCIES: Partial<Record<KycProcessCode, KycProcessCode[]>> = {
  identity: ['phone', 'profile'],
  'proof-of-address': ['phone', 'profile'],
  'enhanced-due-diligence': ['customer-due-diligence'],
  'tax-details': ['profile'],
}

/** How long an approved statement or due diligence holds before the user must give it again. */
const VALIDITY_MS = 365 * 24 * 3600 * 1000

/** A process as stored, or as it starts when it never changed. */
interface ProcessRecord {
  code: KycProcessCode
  status: KycStatus
  model: Model
  type: string | null
  input: JsonObject | null
  output: JsonObject | null
  /** Never served: answered form categories, attempts used. */
  state: { answered?: string[]; attemptsUsed?: number }
  verifiedKey: string | null
}

interface Declared {
  email: string
  profile: Profile
}

interface Target {
  organizationId: string
  userId: string
  declared: Declared
}

const REFUSAL_MESSAGES: Record<KycRefusal, string> = {
  'kyc-process-update-not-allowed': 'The current status of the process does not allow updates',
  'kyc-process-status-exempt': 'The process is not required for this user',
  'form-already-completed': 'The form has already been completed',
  'phone-already-verified': 'Phone already verified',
  'email-already-verified': 'Email already verified',
}

/** The next status, or the refusal as the error the client receives. */
function move(code: KycProcessCode, from: KycStatus, event: KycEvent): KycStatus {
  const result = transition(code, from, event)
  if (!result.allowed) throw operationNotAllowed(REFUSAL_MESSAGES[result.reason], [result.reason])
  return result.status
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as T
}

const addressComplete = (address: Profile['address']) => Boolean(address?.country && address.city && address.line1 && address.postalCode)

function factsOf(declared: Declared): DeclaredFacts {
  const p = declared.profile
  return {
    profileComplete: Boolean(p.fullName && p.birthdate && p.primaryCitizenship && addressComplete(p.address)),
    addressComplete: addressComplete(p.address),
    residenceCountry: p.address?.country ?? '',
  }
}

function profileInput(profile: Profile): JsonObject {
  return definedOnly({
    fullName: profile.fullName,
    birthdate: profile.birthdate,
    birthplace: profile.birthplace,
    primaryCitizenship: profile.primaryCitizenship,
    otherCitizenships: profile.otherCitizenships,
    address: profile.address,
  })
}

/** The process before anything happened to it: what the user's creation declared. */
function initialRecord(code: KycProcessCode, declared: Declared): ProcessRecord {
  const base = { code, status: initialStatus(code, factsOf(declared)), model: DEFAULT_MODELS[code], type: null, input: null, output: null, state: {}, verifiedKey: null }
  const { profile } = declared
  switch (code) {
    case 'profile':
      return { ...base, input: profileInput(profile) }
    case 'address':
      return { ...base, input: profile.address ? { address: profile.address } : null }
    case 'email':
      return { ...base, input: { email: declared.email } }
    case 'phone':
      return { ...base, input: profile.phone ? { phone: profile.phone.number, country: profile.phone.country } : null }
    case 'identity':
    case 'proof-of-address':
      return { ...base, type: 'none' }
    default:
      return base
  }
}

function recordOf(row: KycProcessRow): ProcessRecord {
  return {
    code: row.code as KycProcessCode,
    status: row.status as KycStatus,
    model: row.model as Model,
    type: row.type,
    input: row.input,
    output: row.output,
    state: row.state as ProcessRecord['state'],
    verifiedKey: row.verified_key,
  }
}

function valuesOf(record: ProcessRecord): repository.KycProcessValues {
  return { status: record.status, model: record.model, type: record.type, input: record.input, output: record.output, state: record.state, verified_key: record.verifiedKey }
}

function attemptsLeft(code: KycProcessCode, record: ProcessRecord): boolean {
  return !isFormCode(code) || (record.state.attemptsUsed ?? 0) < FORMS[code].maxAttempts
}

/** Whether a form still has questions for the user: answering, or retrying a rejected attempt. */
function formOpen(code: FormCode, record: ProcessRecord): boolean {
  return record.status === 'pending' || (record.status === 'failed' && attemptsLeft(code, record))
}

function answeredOf(record: ProcessRecord): string[] {
  return record.status === 'failed' ? [] : (record.state.answered ?? [])
}

function throwIf(error: DomainError | null): void {
  if (error) throw error
}

function dateInvalid(property: string, message: string, rule: string): DomainError {
  return new DomainError('date_invalid', message, { details: { rule, threshold: { limit: 0, unit: 'milliseconds' }, context: 'body', property } })
}

function checkFutureTimestamp(property: string, value: string, now: Date): DomainError | null {
  return Date.parse(value) > now.getTime() ? null : dateInvalid(property, 'The date must be in the future', 'difference-less-than-threshold')
}

function checkVerifiedAt(value: string | undefined, now: Date, property = 'output.verifiedAt'): void {
  if (value !== undefined) throwIf(checkPastTimestamp(property, value, now))
}

/** Given and family name from a declared full name: the last word is the family name. */
function splitName(fullName: string | undefined): { givenName?: string; familyName?: string } {
  if (!fullName) return {}
  const words = fullName.trim().split(/\s+/)
  return words.length < 2 ? { givenName: words[0] } : { givenName: words.slice(0, -1).join(' '), familyName: words.at(-1) }
}

/** Identity documents that show the holder's address. */
const ADDRESS_DOCUMENTS: ReadonlySet<string> = new Set(['driving-license', 'id-card', 'residence-permit'])

/** Whether an address read from a document is the declared (complete) residence: same country, first line and postal code. */
function sameResidence(read: PostalAddress, declared: Profile['address']): boolean {
  if (!declared || !addressComplete(declared)) return false
  const text = (value: string | undefined) => (value ?? '').trim().replace(/\s+/g, ' ').toLowerCase()
  const code = (value: string | undefined) => (value ?? '').replace(/\s+/g, '').toUpperCase()
  return read.country === declared.country && text(read.line1) === text(declared.line1) && code(read.postalCode) === code(declared.postalCode)
}

const PO_BOX = /\b(?:p\.?\s*o\.?\s*box|post\s+office\s+box)\b/i

export interface KycProcessStatus {
  status: KycStatus
  [detail: string]: unknown
}

export class KycService {
  private readonly db: Db
  private readonly users: UsersService
  private readonly countries: CountriesService
  private readonly provider: KycProvider | null
  private readonly files: UploadedFiles | null

  /**
   * `provider` checks service-verified evidence (null: only partner-verified updates are allowed); `files` resolves
   * uploaded evidence (null: updates that reference files are refused until file storage is available).
   */
  constructor(deps: { db: Db; users: UsersService; countries: CountriesService; provider: KycProvider | null; files: UploadedFiles | null }) {
    this.db = deps.db
    this.users = deps.users
    this.countries = deps.countries
    this.provider = deps.provider
    this.files = deps.files
  }

  // Reading

  private async target(organizationId: string, userId: string | null): Promise<Target> {
    const declared = userId === null ? null : await this.users.declared(organizationId, userId)
    if (!declared || declared.type !== 'individual' || userId === null) throw notFound('user')
    return { organizationId, userId, declared: { email: declared.email, profile: declared.profile } }
  }

  private async records(target: Target): Promise<Record<KycProcessCode, ProcessRecord>> {
    const rows = await repository.listProcesses(this.db, target.organizationId, target.userId)
    const stored = new Map(rows.map((row) => [row.code, recordOf(row)]))
    return Object.fromEntries(KYC_PROCESS_CODES.map((code) => [code, stored.get(code) ?? initialRecord(code, target.declared)])) as Record<
      KycProcessCode,
      ProcessRecord
    >
  }

  private summaryOf(target: Target, records: Record<KycProcessCode, ProcessRecord>): KycSummary {
    const statuses = Object.fromEntries(KYC_PROCESS_CODES.map((code) => [code, records[code].status])) as Record<KycProcessCode, KycStatus>
    const finalFailures = KYC_PROCESS_CODES.filter((code) => isFormCode(code) && records[code].status === 'failed' && !attemptsLeft(code, records[code]))
    const address = target.declared.profile.address
    const residenceRestricted = address !== undefined && this.countries.closedToResidents(address)
    return summarize(statuses, { residenceRestricted, finalFailures })
  }

  /** The overview of the user the principal acts for; `detailed` processes carry their `hint`. */
  async overview(principal: Principal, detailed: readonly string[], acceptLanguage: string | undefined): Promise<{ body: KycOverview; language: FormLocale }> {
    const language = localeOf(acceptLanguage)
    const target = await this.target(principal.organizationId, principal.userId)
    const records = await this.records(target)
    const rules = profileRules(subdivisionRefusal(target.declared.profile, records['proof-of-address']) === null)
    const processes = Object.fromEntries(
      KYC_PROCESS_CODES.map((code) => [KYC_PROCESSES[code], viewOf(records[code], detailed.includes(KYC_PROCESSES[code]) ? language : null, rules)]),
    )
    return { body: { summary: this.summaryOf(target, records), processes } as unknown as KycOverview, language }
  }

  /**
   * What capability rules need, per process code: its status, plus for `phone` the phone's country, for `address`
   * and `profile` the residence country, and for `self-categorization-statement` the review result and investor type.
   * 404 when the user is not an active individual of the organization.
   */
  async statusesFor(organizationId: string, userId: string): Promise<Record<KycProcessCode, KycProcessStatus>> {
    const target = await this.target(organizationId, userId)
    const records = await this.records(target)
    const residenceCountry = target.declared.profile.address?.country ?? null
    const statuses = Object.fromEntries(KYC_PROCESS_CODES.map((code) => [code, { status: records[code].status } as KycProcessStatus])) as Record<KycProcessCode, KycProcessStatus>
    statuses.profile.residenceCountry = residenceCountry
    statuses.address.residenceCountry = residenceCountry
    statuses.phone.country = (records.phone.input?.country as string | undefined) ?? null
    const statement = records['self-categorization-statement']
    statuses['self-categorization-statement'].result = (statement.output?.result as string | undefined) ?? null
    statuses['self-categorization-statement'].investorType = ((statement.input?.answers as JsonObject | undefined)?.investor as { type?: string } | undefined)?.type ?? null
    statuses['self-categorization-statement'].expiresAt = (statement.output?.expiresAt as string | undefined) ?? null
    statuses['customer-due-diligence'].score = (records['customer-due-diligence'].output?.score as string | undefined) ?? null
    return statuses
  }

  // Writing

  /**
   * Runs `work` in a transaction holding the rows of `codes` (created from their initial state when needed).
   * `save` writes a process and, when its status changed, its event, in that same transaction.
   */
  private async change<T>(
    target: Target,
    codes: readonly KycProcessCode[],
    work: (unit: { tx: Tx; records: Map<KycProcessCode, ProcessRecord>; save: (next: ProcessRecord) => Promise<void> }) => Promise<T>,
  ): Promise<T> {
    const { organizationId, userId } = target
    const ordered = KYC_PROCESS_CODES.filter((code) => codes.includes(code))
    try {
      return await this.db.transaction().execute(async (tx) => {
        const now = new Date()
        const records = new Map<KycProcessCode, ProcessRecord>()
        for (const code of ordered) {
          let row = await repository.lockProcess(tx, organizationId, userId, code)
          if (!row) {
            await repository.insertProcess(tx, organizationId, userId, code, valuesOf(initialRecord(code, target.declared)), now)
            row = await repository.lockProcess(tx, organizationId, userId, code)
          }
          records.set(code, recordOf(row!))
        }
        const save = async (next: ProcessRecord) => {
          const previous = records.get(next.code)
          if (!previous) throw new Error(`process ${next.code} is not held by this change`)
          await repository.updateProcess(tx, organizationId, userId, next.code, valuesOf(next), now)
          if (previous.status !== next.status) {
            await recordEvent(tx, {
              organizationId,
              type: `core.kyc.${next.code}.status-changed`,
              subject: { type: 'user', id: userId },
              userId,
              data: { status: next.status, userId },
              occurredAt: now,
            })
          }
          records.set(next.code, next)
        }
        return work({ tx, records, save })
      })
    } catch (error) {
      if (isUniqueViolation(error, 'kyc_processes_verified_key_unique')) {
        throw conflict('phone_already_exists', 'The provided phone is already in use by another user')
      }
      throw error
    } finally {
      // The change may have touched the user's declared data; this process's cache must not serve the old one.
      this.users.forget(organizationId, userId)
    }
  }

  private async acting(principal: Principal): Promise<Target> {
    return this.target(principal.organizationId, principal.userId)
  }

  private isTestPhoneNumber(number: string, country: string): boolean {
    return this.provider?.isTestPhoneNumber?.(number, country) ?? false
  }

  async updatePhone(principal: Principal, body: UpdatePhoneBody): Promise<{ phone: JsonObject }> {
    const now = new Date()
    checkVerifiedAt(body.output?.verifiedAt, now)
    const phone = body.input ? this.checkPhone(body.input.phone, body.input.country) : null
    const target = await this.acting(principal)
    const record = await this.change(target, ['phone'], async ({ tx, records, save }) => {
      const current = records.get('phone')!
      const output = body.output ? { verifiedAt: new Date(body.output.verifiedAt).toISOString() } : null
      // A sandbox test number belongs to nobody: any number of users may verify it.
      const key = (number: string, country: string) => (this.isTestPhoneNumber(number, country) ? null : number)
      if (!phone) {
        const registered = current.input !== null
        const status = move('phone', current.status, { type: 'verify', registered })
        await save({ ...current, status, output, verifiedKey: key(current.input!.phone as string, current.input!.country as string) })
        return records.get('phone')!
      }
      const status = move('phone', current.status, output ? { type: 'attest', approved: true } : { type: 'register' })
      const verifiedKey = key(phone.number, phone.country)
      if (verifiedKey !== null && (await repository.verifiedByAnother(tx, target.organizationId, target.userId, 'phone', phone.number))) {
        throw conflict('phone_already_exists', 'The provided phone is already in use by another user')
      }
      await save({ ...current, status, input: { phone: phone.number, country: phone.country }, output, verifiedKey: output ? verifiedKey : null })
      await this.users.changeDeclared(tx, target.organizationId, target.userId, { profile: (p) => ({ ...p, phone }) })
      return records.get('phone')!
    })
    return { phone: viewOf(record, null) }
  }

  /** The number in E.164, valid for the country (or one of the sandbox's test numbers), where this deployment accepts phones of that country. */
  private checkPhone(number: string, country: string): { number: string; country: string } {
    if (!this.countries.supports(country, 'phone')) {
      throw conflict('country_not_supported', 'The country is not supported', { context: 'body', property: 'input.country' })
    }
    if (this.isTestPhoneNumber(number, country)) return { number, country }
    const parsed = parsePhoneNumberFromString(number)
    if (!parsed || !parsed.isValid() || parsed.country !== country) throw conflict('phone_invalid', 'The phone number is invalid')
    return { number: parsed.number, country }
  }

  async updateEmail(principal: Principal, body: UpdateEmailBody): Promise<{ email: JsonObject }> {
    const now = new Date()
    checkVerifiedAt(body.output?.verifiedAt, now)
    const target = await this.acting(principal)
    const record = await this.change(target, ['email'], async ({ tx, records, save }) => {
      const current = records.get('email')!
      const output = body.output ? { verifiedAt: new Date(body.output.verifiedAt).toISOString() } : null
      if (!body.input) {
        const status = move('email', current.status, { type: 'verify', registered: current.input !== null })
        await save({ ...current, status, output })
        return records.get('email')!
      }
      const status = move('email', current.status, output ? { type: 'attest', approved: true } : { type: 'register' })
      await save({ ...current, status, input: { email: body.input.email }, output })
      await this.users.changeDeclared(tx, target.organizationId, target.userId, { email: body.input.email })
      return records.get('email')!
    })
    return { email: viewOf(record, null) }
  }

  /**
   * Changes the declared profile: the flat fields (`citizenshipCountry` being the former name of
   * `primaryCitizenship`) or, deprecated, `details` answering the profile's form. Fields the rules do not let the
   * update change are ignored, each with a warning.
   */
  async updateProfile(
    principal: Principal,
    body: UpdateProfileBody,
    acceptLanguage?: string,
  ): Promise<{ body: { profile: JsonObject; warnings?: Record<string, Warning[]> }; language: FormLocale | null }> {
    // The deprecated form answers with its hint while the profile is pending, in the language asked for.
    const language = body.input.details === undefined ? null : localeOf(acceptLanguage)
    const target = await this.acting(principal)
    const records = await this.records(target)
    const declaredProfile = target.declared.profile
    const rules = profileRules(subdivisionRefusal(declaredProfile, records['proof-of-address']) === null)
    const { details, citizenshipCountry, ...flat } = body.input
    let base = 'input'
    let requested: ProfileInput
    if (details !== undefined) {
      const violations = detailsViolations(rules, profileInput(declaredProfile), details)
      if (violations.length > 0) throw requestInvalid('body', violations)
      base = 'input.details'
      requested = details as ProfileInput
    } else {
      if (citizenshipCountry !== undefined && flat.primaryCitizenship !== undefined && citizenshipCountry !== flat.primaryCitizenship) {
        throw requestInvalid('body', [{ property: 'input.citizenshipCountry', rule: 'const', ruleParams: { allowedValue: flat.primaryCitizenship } }])
      }
      requested = citizenshipCountry === undefined ? flat : { ...flat, primaryCitizenship: citizenshipCountry }
    }
    const { input, warnings } = applyRules(requested, rules, declaredProfile, base)

    const now = new Date()
    if (input.birthdate !== undefined) {
      const error = checkBirthdate(input.birthdate, now)
      if (error) throw new DomainError(error.code, error.message, { details: { ...error.details, property: `${base}.birthdate` } })
    }
    const unsupported = (property: string) => conflict('country_not_supported', 'The country is not supported', { context: 'body', property: `${base}.${property}` })
    if (input.primaryCitizenship !== undefined && !this.countries.supports(input.primaryCitizenship, 'citizenship')) {
      throw unsupported(details === undefined && citizenshipCountry !== undefined && flat.primaryCitizenship === undefined ? 'citizenshipCountry' : 'primaryCitizenship')
    }
    input.otherCitizenships?.forEach((code, i) => {
      if (!this.countries.supports(code, 'citizenship')) throw unsupported(`otherCitizenships[${i}]`)
    })
    if (input.birthplace !== undefined && !this.countries.supports(input.birthplace.country)) throw unsupported('birthplace.country')
    this.checkAddressUpdate(target, input.address, `${base}.address`)
    const declared = await this.declare(target, (profile) =>
      definedOnly({
        ...profile,
        fullName: input.fullName ?? profile.fullName,
        birthdate: input.birthdate ?? profile.birthdate,
        birthplace: input.birthplace ?? profile.birthplace,
        primaryCitizenship: input.primaryCitizenship ?? profile.primaryCitizenship,
        citizenshipCountry: input.primaryCitizenship ?? profile.citizenshipCountry,
        otherCitizenships: input.otherCitizenships ?? profile.otherCitizenships,
        address: mergeAddress(profile.address, input.address),
      }),
    )
    const profile = viewOf(declared.get('profile')!, language, rules)
    return { body: warnings.length > 0 ? { profile, warnings: { input: warnings } } : { profile }, language }
  }

  async updateAddress(principal: Principal, body: UpdateAddressBody): Promise<{ address: JsonObject }> {
    const target = await this.acting(principal)
    const { address } = body.input
    this.checkAddressUpdate(target, address, 'input.address')
    const declared = target.declared.profile.address
    if (address.subdivision !== undefined && address.subdivision !== declared?.subdivision) {
      const refusal = subdivisionRefusal(target.declared.profile, (await this.records(target))['proof-of-address'])
      if (refusal !== null) throw operationNotAllowed(SUBDIVISION_REFUSALS[refusal], [refusal])
    }
    const records = await this.declare(target, (profile) => ({ ...profile, address: mergeAddress(profile.address, address) }))
    return { address: viewOf(records.get('address')!, null) }
  }

  private checkAddressUpdate(target: Target, address: UpdateAddressBody['input']['address'] | undefined, property: string): void {
    if (!address) return
    const country = target.declared.profile.address?.country ?? ''
    if (address.subdivision !== undefined && (!address.subdivision.startsWith(`${country}-`) || !this.countries.hasSubdivision(address.subdivision))) {
      throw conflict('subdivision_not_supported', 'The subdivision is not supported', { context: 'body', property: `${property}.subdivision` })
    }
    if ([address.line1, address.line2].some((line) => typeof line === 'string' && PO_BOX.test(line))) {
      throw conflict('po_boxes_not_allowed', 'PO boxes are not allowed')
    }
  }

  /** Profile and address share the declared data: both move together, and the user's record follows. */
  private async declare(target: Target, update: (profile: Profile) => Profile): Promise<Map<KycProcessCode, ProcessRecord>> {
    return this.change(target, ['profile', 'address'], async ({ tx, records, save }) => {
      let updated: Profile | undefined
      await this.users.changeDeclared(tx, target.organizationId, target.userId, {
        profile: (current) => {
          updated = update(current)
          return updated
        },
      })
      const facts = factsOf({ email: target.declared.email, profile: updated! })
      const profile = records.get('profile')!
      await save({ ...profile, status: move('profile', profile.status, { type: 'declare', complete: facts.profileComplete }), input: profileInput(updated!) })
      const address = records.get('address')!
      await save({ ...address, status: move('address', address.status, { type: 'declare', complete: facts.addressComplete }), input: { address: updated!.address } })
      return records
    })
  }

  /** Resolves uploaded evidence through the files module. */
  private async evidence(target: Target, media: readonly { context: string; fileId: string }[]): Promise<EvidenceFile[]> {
    if (!this.files) throw operationNotAllowed('File storage is not available, so evidence files cannot be submitted', ['permission-denied'])
    const files: EvidenceFile[] = []
    for (const item of media) {
      const file = await this.files.requireUploadedFile(target.organizationId, target.userId, item.fileId)
      files.push({ id: file.id, context: item.context, contentType: file.contentType })
    }
    return files
  }

  private requireProvider(code: 'identity' | 'proof-of-address'): KycProvider {
    if (!this.provider) throw operationNotAllowed(`Service-verified '${code}' updates are not allowed`, ['permission-denied'])
    return this.provider
  }

  /** Refuses early (before files or the provider are involved) when the process cannot take a submission. */
  private async precheck(target: Target, code: KycProcessCode, event: KycEvent): Promise<void> {
    const records = await this.records(target)
    move(code, records[code].status, event)
  }

  async updateIdentity(principal: Principal, body: UpdateIdentityBody): Promise<{ identity: JsonObject }> {
    const now = new Date()
    const output = body.output
    checkVerifiedAt(output?.verifiedAt, now)
    if (body.type === 'document-submission' && body.output) {
      if (body.output.document.expiresAt !== undefined) throwIf(checkFutureTimestamp('output.document.expiresAt', `${body.output.document.expiresAt}T23:59:59.999Z`, now))
      throwIf(checkPastTimestamp('output.person.birthdate', body.output.person.birthdate, now))
    }
    const target = await this.acting(principal)
    await this.precheck(target, 'identity', output ? { type: 'attest', approved: true } : { type: 'submit' })
    const files = body.type === 'document-submission' ? await this.evidence(target, body.input.media) : []
    const input = body.input as JsonObject

    if (output) {
      const record = await this.attest(target, 'identity', body.type, input, output)
      await this.proofOfAddressFromIdentity(target, record)
      await this.runAutomaticChecks(target)
      return { identity: viewOf(record, null) }
    }

    const provider = this.requireProvider('identity')
    let person: PersonData
    if (body.type === 'electronic-verification') {
      const { data } = body.input
      person = definedOnly({ givenName: data.givenName, familyName: data.familyName, birthdate: data.birthdate, citizenship: data.citizenshipCountry, gender: data.gender, address: data.address })
    } else {
      const { profile } = target.declared
      const name = splitName(profile.fullName)
      const missing = [...(name.givenName ? [] : ['missing-name']), ...(profile.birthdate ? [] : ['missing-birthdate'])]
      if (missing.length > 0) throw operationNotAllowed('User cannot submit identity due to incomplete declared information', missing)
      person = definedOnly({ givenName: name.givenName!, familyName: name.familyName, birthdate: profile.birthdate, citizenship: profile.primaryCitizenship, address: profile.address })
    }
    const record = await this.checkWithProvider(target, 'identity', body.type, input, async () => {
      const outcome = await provider.checkIdentity({ submission: body.type, person, files })
      return {
        approved: outcome.approved,
        output: definedOnly({
          provider: provider.name,
          reason: outcome.reason,
          providerDetails: outcome.providerReasons ? { reasons: outcome.providerReasons } : undefined,
          document: body.type === 'document-submission' ? outcome.document : undefined,
          person: body.type === 'document-submission' && outcome.person ? personOutput(outcome.person) : undefined,
        }),
      }
    })
    await this.proofOfAddressFromIdentity(target, record)
    return { identity: viewOf(record, null) }
  }

  /**
   * A verified identity document that shows the declared address of residence (a driving licence, an identity card
   * or a residence permit; a passport shows none) proves it too: a proof of address still to be given (`pending` or
   * `failed`) becomes `ok`, of type `from-identity`, with the identity's provider, model and verification time.
   */
  private async proofOfAddressFromIdentity(target: Target, identity: ProcessRecord): Promise<void> {
    const output = identity.output ?? {}
    const person = output.person as { givenName?: string; familyName?: string; address?: PostalAddress } | undefined
    const document = output.document as { type?: string } | undefined
    if (identity.status !== 'ok' || !ADDRESS_DOCUMENTS.has(document?.type ?? '')) return
    if (!person?.address || !sameResidence(person.address, target.declared.profile.address)) return
    await this.change(target, ['proof-of-address'], async ({ records, save }) => {
      const current = records.get('proof-of-address')!
      if (current.status !== 'pending' && current.status !== 'failed') return
      await save({
        ...current,
        status: move('proof-of-address', current.status, { type: 'derive' }),
        model: identity.model,
        type: 'from-identity',
        input: null,
        output: definedOnly({
          provider: output.provider,
          person: definedOnly({ givenName: person.givenName, familyName: person.familyName, address: person.address }),
          verifiedAt: output.verifiedAt,
        }),
      })
    })
  }

  /** The client attests a check it ran itself (partner-verified): the process is ok with the client's output. */
  private attest(
    target: Target,
    code: 'identity' | 'proof-of-address',
    type: string,
    input: JsonObject,
    output: { verifiedAt: string } & Record<string, unknown>,
  ): Promise<ProcessRecord> {
    return this.change(target, [code], async ({ records, save }) => {
      const current = records.get(code)!
      const status = move(code, current.status, { type: 'attest', approved: true })
      await save({ ...current, status, model: 'partner-verified', type, input, output: { ...output, verifiedAt: new Date(output.verifiedAt).toISOString() } })
      return records.get(code)!
    })
  }

  async updateProofOfAddress(principal: Principal, body: UpdateProofOfAddressBody): Promise<{ proofOfAddress: JsonObject }> {
    const now = new Date()
    const output = body.output
    checkVerifiedAt(output?.verifiedAt, now)
    const target = await this.acting(principal)
    await this.precheck(target, 'proof-of-address', output ? { type: 'attest', approved: true } : { type: 'submit' })
    const files = body.type === 'document-submission' ? await this.evidence(target, body.input.media) : []
    const input = body.input as JsonObject

    if (output) {
      const record = await this.attest(target, 'proof-of-address', body.type, input, output)
      return { proofOfAddress: viewOf(record, null) }
    }

    const provider = this.requireProvider('proof-of-address')
    let person: PersonData & { address: PostalAddress }
    if (body.type === 'electronic-verification') {
      const { data } = body.input
      person = definedOnly({ givenName: data.givenName, familyName: data.familyName, address: data.address })
    } else {
      const { profile } = target.declared
      const name = splitName(profile.fullName)
      const missing = [...(name.givenName ? [] : ['missing-name']), ...(addressComplete(profile.address) ? [] : ['incomplete-address'])]
      if (missing.length > 0) throw operationNotAllowed('User cannot submit proof-of-address due to incomplete declared information', missing)
      person = definedOnly({ givenName: name.givenName!, familyName: name.familyName, address: profile.address! })
    }
    const record = await this.checkWithProvider(target, 'proof-of-address', body.type, input, async () => {
      const outcome = await provider.checkProofOfAddress({ submission: body.type, person, files })
      return {
        approved: outcome.approved,
        output: definedOnly({
          provider: provider.name,
          reason: outcome.reason,
          providerDetails: outcome.providerReasons ? { reasons: outcome.providerReasons } : undefined,
          person: body.type === 'document-submission' ? outcome.person : undefined,
        }),
      }
    })
    return { proofOfAddress: viewOf(record, null) }
  }

  /**
   * A service-verified check: the submission is recorded as `running`, the provider is called outside any
   * transaction, and its outcome is applied in a second one. When the provider cannot answer, the process goes
   * back to `pending` (evidence may be submitted again) and the client gets 503.
   */
  private async checkWithProvider(
    target: Target,
    code: 'identity' | 'proof-of-address',
    type: string,
    input: JsonObject,
    check: () => Promise<{ approved: boolean; output: JsonObject }>,
  ): Promise<ProcessRecord> {
    await this.change(target, [code], async ({ records, save }) => {
      const current = records.get(code)!
      await save({ ...current, status: move(code, current.status, { type: 'submit' }), model: 'service-verified', type, input, output: null })
    })
    let outcome: { approved: boolean; output: JsonObject }
    try {
      outcome = await check()
    } catch (error) {
      await this.change(target, [code], async ({ records, save }) => {
        const current = records.get(code)!
        if (current.status === 'running') await save({ ...current, status: move(code, current.status, { type: 'abort' }) })
      })
      // Retried in 30 s rather than at once: a provider that is down is not back within a second. The cause is
      // kept for the logs; the client only learns that it may retry.
      throw new DomainError('service_unavailable', `The '${code}' verification could not be completed; submit it again later`, { retryAfterSeconds: 30, cause: error })
    }
    const record = await this.change(target, [code], async ({ records, save }) => {
      const current = records.get(code)!
      const verifiedAt = new Date().toISOString()
      await save({ ...current, status: move(code, current.status, { type: 'conclude', approved: outcome.approved }), output: { ...outcome.output, verifiedAt } })
      return records.get(code)!
    })
    await this.runAutomaticChecks(target)
    return record
  }

  async updateEnhancedDueDiligence(principal: Principal, body: UpdateEnhancedDueDiligenceBody): Promise<{ enhancedDueDiligence: JsonObject }> {
    checkVerifiedAt(body.output?.verifiedAt, new Date())
    const target = await this.acting(principal)
    const event: KycEvent = body.output ? { type: 'attest', approved: true } : { type: 'attach' }
    await this.precheck(target, 'enhanced-due-diligence', event)
    await this.evidence(target, body.input.media)
    const record = await this.change(target, ['enhanced-due-diligence'], async ({ records, save }) => {
      const current = records.get('enhanced-due-diligence')!
      const output = body.output ? { verifiedAt: new Date(body.output.verifiedAt).toISOString() } : null
      await save({ ...current, status: move('enhanced-due-diligence', current.status, event), input: body.input, output })
      return records.get('enhanced-due-diligence')!
    })
    await this.runAutomaticChecks(target)
    return { enhancedDueDiligence: viewOf(record, null) }
  }

  async updateSelfCategorization(principal: Principal, body: UpdateSelfCategorizationBody, acceptLanguage: string | undefined) {
    const output = body.output
    const now = new Date()
    checkVerifiedAt(output?.verifiedAt, now)
    if (output) throwIf(checkFutureTimestamp('output.expiresAt', output.expiresAt, now))
    const attested = output
      ? { approved: output.result === 'approved', output: { result: output.result, attempts: output.attempts, expiresAt: iso(output.expiresAt), verifiedAt: iso(output.verifiedAt) } }
      : null
    const { record, language } = await this.updateForm(principal, 'self-categorization-statement', body.input.answers, body.input.formId, attested, acceptLanguage)
    return { body: { selfCategorizationStatement: viewOf(record, language) }, language }
  }

  async updateCryptoRiskAssessment(principal: Principal, body: UpdateCryptoRiskAssessmentBody, acceptLanguage: string | undefined) {
    const output = body.output
    checkVerifiedAt(output?.verifiedAt, new Date())
    const attested = output ? { approved: output.result === 'approved', output: { result: output.result, attempts: output.attempts, verifiedAt: iso(output.verifiedAt) } } : null
    const { record, language } = await this.updateForm(principal, 'crypto-risk-assessment', body.input.answers, body.input.formId, attested, acceptLanguage)
    return { body: { cryptoRiskAssessment: viewOf(record, language) }, language }
  }

  async updateCustomerDueDiligence(principal: Principal, body: UpdateCustomerDueDiligenceBody, acceptLanguage: string | undefined) {
    const output = body.output
    const now = new Date()
    checkVerifiedAt(output?.verifiedAt, now)
    if (output) throwIf(checkFutureTimestamp('output.expiresAt', output.expiresAt, now))
    const attested = output ? { approved: true, output: { score: output.score, expiresAt: iso(output.expiresAt), verifiedAt: iso(output.verifiedAt) } } : null
    const { record, language } = await this.updateForm(principal, 'customer-due-diligence', body.input.answers, body.input.formId, attested, acceptLanguage)
    return { body: { customerDueDiligence: viewOf(record, language) }, language }
  }

  async updateTaxDetails(principal: Principal, body: UpdateTaxDetailsBody, acceptLanguage: string | undefined) {
    const output = body.output
    checkVerifiedAt(output?.verifiedAt, new Date())
    const attested = output ? { approved: output.result === 'approved', output: { result: output.result, verifiedAt: iso(output.verifiedAt) } } : null
    const { record, language } = await this.updateForm(principal, 'tax-details', body.input, undefined, attested, acceptLanguage)
    return { body: { taxDetails: viewOf(record, language) }, language }
  }

  /**
   * Answers one category of a form. Answers are validated against the schema the hint serves; once every
   * category is answered the form is reviewed (or takes the outcome the client attests in `output`).
   */
  private async updateForm(
    principal: Principal,
    code: FormCode,
    answers: JsonObject,
    formId: string | undefined,
    attested: { approved: boolean; output: JsonObject } | null,
    acceptLanguage: string | undefined,
  ): Promise<{ record: ProcessRecord; language: FormLocale }> {
    const language = localeOf(acceptLanguage)
    const form = FORMS[code]
    if (formId !== undefined && formId.toLowerCase() !== form.id) {
      throw requestInvalid('body', [{ property: 'input.formId', rule: 'const', ruleParams: { allowedValue: form.id } }])
    }
    const target = await this.acting(principal)
    const codes: KycProcessCode[] = code === 'customer-due-diligence' ? [code, 'enhanced-due-diligence'] : [code]
    const record = await this.change(target, codes, async ({ records, save }) => {
      const current = records.get(code)!
      const now = new Date()
      const retryAt = retryAtOf(current)
      if (retryAt !== null && retryAt > now) {
        throw new DomainError('operation_not_allowed', `The next attempt may start at ${retryAt.toISOString()}`, {
          details: { reasons: ['kyc-process-update-not-allowed'], retryAt: retryAt.toISOString() },
        })
      }
      const left = attemptsLeft(code, current)
      const answering = move(code, current.status, { type: 'answer', attemptsLeft: left })
      const answered = answeredOf(current)
      const violations = answerViolations(form, answered, answers)
      if (violations.length > 0) throw requestInvalid('body', code === 'tax-details' ? violations.map((v) => ({ ...v, property: v.property.replace(/^input\.answers/, 'input') })) : violations)
      const previous = current.status === 'failed' ? {} : ((code === 'tax-details' ? current.input : current.input?.answers) ?? {}) as JsonObject
      const merged = { ...previous, ...answers }
      const nowAnswered = [...answered, ...Object.keys(answers)]
      const input = code === 'tax-details' ? merged : { formId: form.id, answers: merged }
      const used = current.state.attemptsUsed ?? 0
      const complete = isComplete(form, nowAnswered)
      // A rejection while attempts remain leaves the form to be answered again, from the start.
      const concluded = (status: KycStatus, output: JsonObject): ProcessRecord =>
        status === 'pending'
          ? { ...current, status, input: null, output, state: { answered: [], attemptsUsed: used + 1 } }
          : { ...current, status, input, output, state: { answered: nowAnswered, attemptsUsed: used + 1 } }

      let next: ProcessRecord
      if (attested) {
        if (!complete) throw operationNotAllowed('The outcome can only be given with the last answers of the form', ['form-incomplete'])
        const attempts = attested.output.attempts as { used: number; maximum: number } | undefined
        const retry = !attested.approved && attempts !== undefined && attempts.used < attempts.maximum
        const status = move(code, current.status, { type: 'attest', approved: attested.approved, attemptsLeft: left, retry })
        next = { ...concluded(status, withOffboard(code, status, attested.output, now)), model: 'partner-verified' }
      } else if (complete) {
        const review = form.review(merged)
        const retry = !review.approved && used + 1 < form.maxAttempts
        const status = move(code, answering, { type: 'review', approved: review.approved, retry })
        next = concluded(status, withOffboard(code, status, formOutput(code, form, review, used + 1, now, retry), now))
      } else {
        // The outcome of a rejected attempt stays on view while the next one is answered.
        const output = current.output?.result === 'rejected' && current.status === 'pending' ? current.output : null
        next = { ...current, status: answering, input, output, state: { answered: nowAnswered, attemptsUsed: used } }
      }
      await save(next)
      if (code === 'customer-due-diligence' && next.status === 'ok') {
        const edd = records.get('enhanced-due-diligence')!
        await save({ ...edd, status: move('enhanced-due-diligence', edd.status, { type: 'applicability', applies: next.output?.score === 'high' }) })
      }
      return next
    })
    await this.runAutomaticChecks(target)
    return { record, language }
  }

  /**
   * Screening runs once profile and identity are ok; risk is assessed once screening and due diligence are done.
   * The provider is called outside any transaction; the outcome is applied only if the process is still pending.
   */
  private async runAutomaticChecks(target: Target): Promise<void> {
    const records = await this.records(target)
    const declaredNow = await this.users.declared(target.organizationId, target.userId)
    if (!declaredNow) return
    if (records.screening.status === 'pending' && records.profile.status === 'ok' && records.identity.status === 'ok' && this.provider) {
      const name = splitName(declaredNow.profile.fullName)
      const outcome = await this.provider.screen(
        definedOnly({ givenName: name.givenName ?? '', familyName: name.familyName, birthdate: declaredNow.profile.birthdate, citizenship: declaredNow.profile.primaryCitizenship }),
      )
      await this.conclude(target, 'screening', outcome.approved)
      records.screening.status = outcome.approved ? 'ok' : 'failed'
    }
    const edd = records['enhanced-due-diligence'].status
    if (records.risk.status === 'pending' && records.screening.status === 'ok' && records['customer-due-diligence'].status === 'ok' && (edd === 'ok' || edd === 'exempt')) {
      await this.conclude(target, 'risk', true)
    }
  }

  private async conclude(target: Target, code: 'screening' | 'risk', approved: boolean): Promise<void> {
    await this.change(target, [code], async ({ records, save }) => {
      const current = records.get(code)!
      if (current.status !== 'pending') return
      await save({ ...current, status: move(code, current.status, { type: 'conclude', approved }), output: { result: approved ? 'approved' : 'rejected' } })
    })
  }

  // Expiry

  /** Registers `kyc.self-categorization-expiry`: every minute, the statements expired by then return to `pending`. */
  registerSchedules(schedules: Schedules): void {
    schedules.register({ name: SELF_CATEGORIZATION_EXPIRY_SCHEDULE, periodMs: 60_000, run: async ({ periodStart }) => void (await this.expireSelfCategorizations(periodStart)) })
  }

  /**
   * Returns to `pending` every approved self-categorization statement whose validity ended by `at`, each through the
   * state machine with its status event, as any change of the user's KYC: the user gives the statement again,
   * every category from the start, with the attempts of a new statement (the last answers and outcome stay on
   * view until then). Answers how many expired. A statement changed meanwhile (already expired by another run,
   * answered again) is left as it is, so running this twice does nothing more.
   */
  async expireSelfCategorizations(at: Date): Promise<number> {
    const code = 'self-categorization-statement'
    let expired = 0
    let after: { organizationId: string; userId: string } | null = null
    for (;;) {
      const page = await repository.findExpiredStatements(this.db, at.toISOString(), after, 100)
      for (const row of page) {
        let target: Target
        try {
          target = await this.target(row.organization_id, row.user_id)
        } catch (error) {
          // A user deleted (or no longer an individual) has no KYC to keep up to date.
          if (error instanceof DomainError && error.code === 'entity_not_found') continue
          throw error
        }
        const changed = await this.change(target, [code], async ({ records, save }) => {
          const current = records.get(code)!
          if (current.status !== 'ok' || !statementExpired(current.output, at)) return false
          await save({ ...current, status: move(code, current.status, { type: 'expire' }), state: { answered: [], attemptsUsed: 0 } })
          return true
        })
        if (changed) expired++
      }
      if (page.length < 100) return expired
      const last = page[page.length - 1]!
      after = { organizationId: last.organization_id, userId: last.user_id }
    }
  }
}

/** The person as identity outputs show it (the reference's shape: no citizenship). */
function personOutput(person: PersonData): JsonObject {
  return definedOnly({ givenName: person.givenName, familyName: person.familyName, birthdate: person.birthdate, gender: person.gender, address: person.address })
}

/** How long after a form's last rejection the user's relationship is wound down (`output.offboard.endsAt`). */
const OFFBOARD_PERIOD_MS = 30 * 24 * 3600 * 1000
const OFFBOARDING_FORMS: ReadonlySet<FormCode> = new Set(['crypto-risk-assessment', 'self-categorization-statement'])

/** A form rejected on its last attempt offboards the user: the output says until when. */
function withOffboard(code: FormCode, status: KycStatus, output: JsonObject, at: Date): JsonObject {
  if (status !== 'failed' || !OFFBOARDING_FORMS.has(code)) return output
  return { ...output, offboard: { endsAt: new Date(at.getTime() + OFFBOARD_PERIOD_MS).toISOString() } }
}

/** When the next attempt of a form rejected with attempts left may start; null when it may now. */
function retryAtOf(record: ProcessRecord): Date | null {
  const retryAt = (record.output?.attempts as { retryAt?: unknown } | undefined)?.retryAt
  return record.status === 'pending' && typeof retryAt === 'string' ? new Date(retryAt) : null
}

function iso(value: string): string {
  return new Date(value).toISOString()
}

function formOutput(code: FormCode, form: FormDefinition, review: { approved: boolean; score?: string }, used: number, verifiedAt: Date, retry: boolean): JsonObject {
  const result = review.approved ? 'approved' : 'rejected'
  const expiresAt = new Date(verifiedAt.getTime() + VALIDITY_MS).toISOString()
  switch (code) {
    case 'self-categorization-statement':
      return definedOnly({ result, attempts: { used, maximum: form.maxAttempts }, expiresAt: review.approved ? expiresAt : undefined, verifiedAt: verifiedAt.toISOString() })
    case 'crypto-risk-assessment': {
      const retryAt = retry && form.retryDelayMs !== undefined ? new Date(verifiedAt.getTime() + form.retryDelayMs).toISOString() : undefined
      return { result, attempts: definedOnly({ used, maximum: form.maxAttempts, retryAt }), verifiedAt: verifiedAt.toISOString() }
    }
    case 'customer-due-diligence':
      return { score: review.score ?? 'low', expiresAt, verifiedAt: verifiedAt.toISOString() }
    case 'tax-details':
      return { result, verifiedAt: verifiedAt.toISOString() }
  }
}

function mergeAddress(current: Profile['address'], change: UpdateAddressBody['input']['address'] | undefined): Profile['address'] {
  if (!change) return current
  const merged: JsonObject = { ...current }
  for (const [key, value] of Object.entries(change)) {
    if (value === null) delete merged[key]
    else merged[key] = value
  }
  return merged as Profile['address']
}

function localeOf(acceptLanguage: string | undefined): FormLocale {
  const locale = negotiateFormLocale(acceptLanguage)
  if (locale === null) throw conflict('locale_invalid', 'The locale is invalid', { context: 'headers', property: 'accept-language' })
  return locale
}

const rule = (presence: ProfileRule['presence'], editable = true): ProfileRule => ({ presence, editable })

/** Residence countries where the region decides what a resident may do (state licensing in the United States): it is declared once. */
const FIXED_SUBDIVISION_COUNTRIES: ReadonlySet<string> = new Set(['US'])

const SUBDIVISION_REFUSALS = {
  'subdivision-update-restricted-by-residence-country': 'Subdivision update is restricted by residence country',
  'subdivision-update-non-authoritative-proof-of-address': "Partner-verified 'proof-of-address' is required to update subdivision",
} as const
type SubdivisionRefusal = keyof typeof SUBDIVISION_REFUSALS

/**
 * Why the declared region of residence may not change now, or null when it may: it may be declared when there is
 * none, and changed only on an address the client itself verified (a partner-verified proof of address), since the
 * region decides which rules apply to the user.
 */
function subdivisionRefusal(profile: Profile, proofOfAddress: ProcessRecord): SubdivisionRefusal | null {
  const address = profile.address
  if (address?.subdivision === undefined) return null
  if (FIXED_SUBDIVISION_COUNTRIES.has(address.country)) return 'subdivision-update-restricted-by-residence-country'
  if (proofOfAddress.status !== 'ok' || proofOfAddress.model !== 'partner-verified') return 'subdivision-update-non-authoritative-proof-of-address'
  return null
}

/** What makes the profile complete (`required`) and what an update may change; the residence country never changes. */
function profileRules(subdivisionEditable: boolean): ProfileRules {
  return {
    fullName: rule('required'),
    birthdate: rule('required'),
    birthplace: { ...rule('optional'), rules: { country: rule('required'), town: rule('required') } },
    citizenshipCountry: rule('required'),
    primaryCitizenship: rule('required'),
    otherCitizenships: rule('optional'),
    address: {
      ...rule('required'),
      rules: { subdivision: rule('optional', subdivisionEditable), city: rule('required'), line1: rule('required'), line2: rule('optional'), postalCode: rule('required') },
    },
  }
}

type ProfileInput = Omit<UpdateProfileBody['input'], 'details' | 'citizenshipCountry'>
type Warning = { code: string; message: string; details: JsonObject }

/**
 * The fields of `input` the rules let the update change; the others are dropped, each with a warning (a field
 * sent with the value it already has changes nothing and is dropped silently).
 */
function applyRules(input: ProfileInput, rules: ProfileRules, declared: Profile, base: string): { input: ProfileInput; warnings: Warning[] } {
  const warnings: Warning[] = []
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)
  const allowed = (value: unknown, current: unknown, fieldRule: ProfileRule, property: string): boolean => {
    if (fieldRule.presence !== 'disallowed' && fieldRule.editable) return true
    if (!same(value, current)) {
      const disallowed = fieldRule.presence === 'disallowed'
      warnings.push({
        code: 'verification_rule_violated',
        message: `Field '${property}' was ignored as ${disallowed ? 'its presence is disallowed' : 'it is not editable'}`,
        details: { property, rule: disallowed ? 'presence' : 'editable' },
      })
    }
    return false
  }
  const kept: JsonObject = {}
  for (const [field, value] of Object.entries(input)) {
    if (value === undefined) continue
    if (field !== 'address') {
      if (allowed(value, declared[field as keyof Profile], rules[field as keyof ProfileRules], `${base}.${field}`)) kept[field] = value
      continue
    }
    const address: JsonObject = {}
    for (const [part, partValue] of Object.entries(value as JsonObject)) {
      const partRule = rules.address.rules[part as keyof ProfileRules['address']['rules']]
      if (allowed(partValue, declared.address?.[part as keyof NonNullable<Profile['address']>], partRule, `${base}.address.${part}`)) address[part] = partValue
    }
    if (Object.keys(address).length > 0) kept.address = address
  }
  return { input: kept as ProfileInput, warnings }
}

/** A process as served; with a language, forms (and a pending profile) that still have questions carry their `hint`. */
export function viewOf(record: ProcessRecord, hintLanguage: FormLocale | null, rules: ProfileRules = profileRules(true)): JsonObject {
  const { code } = record
  const derived = record.type === 'from-identity'
  const verification = definedOnly({
    model: record.model,
    method: PROCESS_KINDS[code] === 'automatic' || derived ? 'automatic' : 'manual',
    triggers: code === 'screening' ? ['profile', 'identity'] : derived ? ['identity'] : undefined,
    dependencies: DEPENDENCIES[code] ?? [],
    submittable: code === 'identity' || code === 'proof-of-address' ? record.status === 'pending' || record.status === 'failed' : undefined,
    rules: code === 'profile' ? rules : undefined,
  })
  const view: JsonObject = { code, status: record.status }
  if (code === 'identity' || code === 'proof-of-address') view.type = record.type ?? 'none'
  view.verification = verification
  if (record.input !== null && !(view.type === 'none')) view.input = record.input
  if (record.output !== null && !(view.type === 'none')) view.output = offboardView(record.output)
  if (isFormCode(code) && hintLanguage !== null && formOpen(code, record)) view.hint = hintOf(FORMS[code], answeredOf(record), hintLanguage ?? DEFAULT_FORM_LOCALE)
  if (code === 'profile' && hintLanguage !== null && record.status === 'pending') view.hint = profileFormHint(rules, record.input ?? {}, hintLanguage)
  return view
}

/** An offboarding is complete once its period is over. */
function offboardView(output: JsonObject): JsonObject {
  const offboard = output.offboard as { endsAt?: unknown; completedAt?: unknown } | undefined
  if (typeof offboard?.endsAt !== 'string' || offboard.completedAt !== undefined || Date.parse(offboard.endsAt) > Date.now()) return output
  return { ...output, offboard: { ...offboard, completedAt: offboard.endsAt } }
}

export type { KycProcessKey }
