/**
 * The KYC process state machines and the overall summary: pure functions, no I/O. Every status change of a
 * process goes through `transition`, so that the rules (and the refusals clients see) live in one place.
 */

export const KYC_STATUSES = ['ok', 'failed', 'running', 'pending', 'exempt'] as const
export type KycStatus = (typeof KYC_STATUSES)[number]

/** Process codes, in the order the overview lists them, with the key each has in the overview. */
/** The processes the hosted KYC widget submits (docs/kyc-widget.md), in the order it walks them. */
export const KYC_WIDGET_PROCESSES = ['profile', 'identity', 'proof-of-address'] as const

export const KYC_PROCESSES = {
  profile: 'profile',
  address: 'address',
  email: 'email',
  phone: 'phone',
  identity: 'identity',
  'proof-of-address': 'proofOfAddress',
  'customer-due-diligence': 'customerDueDiligence',
  'enhanced-due-diligence': 'enhancedDueDiligence',
  'crypto-risk-assessment': 'cryptoRiskAssessment',
  'self-categorization-statement': 'selfCategorizationStatement',
  'tax-details': 'taxDetails',
  screening: 'screening',
  risk: 'risk',
} as const
export type KycProcessCode = keyof typeof KYC_PROCESSES
export type KycProcessKey = (typeof KYC_PROCESSES)[KycProcessCode]
export const KYC_PROCESS_CODES = Object.keys(KYC_PROCESSES) as KycProcessCode[]

/**
 * How a process moves:
 * - `declared`: data the user declares (profile, address); ok once complete.
 * - `contact`: a phone or email registered unverified, then verified once; a verified one is final.
 * - `document`: evidence checked by the service's provider (`submit` → `running` → `conclude`), attested by the
 *   client (`attest`) or proved by another process (`derive`); a failed check may be submitted again.
 * - `form`: questions answered in parts, reviewed once complete; a form rejected while attempts remain is `pending`
 *   again (answered anew), one rejected on its last attempt `failed`; a completed one is final.
 * - `automatic`: run by the service when what it depends on is ready; clients cannot update it.
 */
export type KycProcessKind = 'declared' | 'contact' | 'document' | 'form' | 'automatic'

export const PROCESS_KINDS: Record<KycProcessCode, KycProcessKind> = {
  profile: 'declared',
  address: 'declared',
  email: 'contact',
  phone: 'contact',
  identity: 'document',
  'proof-of-address': 'document',
  'customer-due-diligence': 'form',
  'enhanced-due-diligence': 'document',
  'crypto-risk-assessment': 'form',
  'self-categorization-statement': 'form',
  'tax-details': 'form',
  screening: 'automatic',
  risk: 'automatic',
}

export type KycEvent =
  /** Declared data changed; `complete` when every required field is now present. */
  | { type: 'declare'; complete: boolean }
  /** A phone or email registered without verification (replacing an unverified one). */
  | { type: 'register' }
  /** The pending registration is verified (the client sends only `output.verifiedAt`). */
  | { type: 'verify'; registered: boolean }
  /**
   * The client attests the outcome itself (partner-verified), e.g. with `output.verifiedAt`. A form rejected with
   * `retry` (attempts remain) is answered again.
   */
  | { type: 'attest'; approved: boolean; attemptsLeft?: boolean; retry?: boolean }
  /** Evidence handed to the service for checking. */
  | { type: 'submit' }
  /** Evidence attached for the client to attest later (no check by the service). */
  | { type: 'attach' }
  /** The outcome of a running check, or of an automatic process. */
  | { type: 'conclude'; approved: boolean }
  /** A running check could not be completed (the provider was unreachable): evidence may be submitted again. */
  | { type: 'abort' }
  /** Part of a form answered; `attemptsLeft` says whether a rejected form may start again. */
  | { type: 'answer'; attemptsLeft: boolean }
  /** A complete form reviewed; rejected with `retry` (attempts remain), it is answered again. */
  | { type: 'review'; approved: boolean; retry?: boolean }
  /** The outcome another process proved: an identity document that shows the declared address proves the address. */
  | { type: 'derive' }
  /** Whether the process applies to the user changed (residence, another process's outcome). */
  | { type: 'applicability'; applies: boolean }
  /** A completed form's validity ended (a self-categorization statement holds a year): it must be given again. */
  | { type: 'expire' }

/** The reasons (`details.reasons`) of a refused update, as the reference names them. */
export type KycRefusal =
  | 'kyc-process-update-not-allowed'
  | 'kyc-process-status-exempt'
  | 'form-already-completed'
  | 'phone-already-verified'
  | 'email-already-verified'

export type KycTransition = { allowed: true; status: KycStatus } | { allowed: false; reason: KycRefusal }

const to = (status: KycStatus): KycTransition => ({ allowed: true, status })
const refuse = (reason: KycRefusal): KycTransition => ({ allowed: false, reason })
const NOT_ALLOWED = refuse('kyc-process-update-not-allowed')

/** The next status of a process after an event, or why the event is refused in the current status. */
export function transition(code: KycProcessCode, from: KycStatus, event: KycEvent): KycTransition {
  if (event.type === 'applicability') {
    if (event.applies) return from === 'exempt' ? to('pending') : to(from)
    return from === 'pending' || from === 'exempt' ? to('exempt') : to(from)
  }
  if (from === 'exempt') return refuse('kyc-process-status-exempt')
  switch (PROCESS_KINDS[code]) {
    case 'declared':
      return declared(from, event)
    case 'contact':
      return contact(code as 'phone' | 'email', from, event)
    case 'document':
      return documentEvidence(from, event)
    case 'form':
      return form(from, event)
    case 'automatic':
      return automatic(from, event)
  }
}

function declared(from: KycStatus, event: KycEvent): KycTransition {
  if (event.type !== 'declare' || (from !== 'pending' && from !== 'ok')) return NOT_ALLOWED
  return to(event.complete ? 'ok' : 'pending')
}

function contact(code: 'phone' | 'email', from: KycStatus, event: KycEvent): KycTransition {
  if (from === 'ok') return refuse(`${code}-already-verified`)
  if (from !== 'pending') return NOT_ALLOWED
  switch (event.type) {
    case 'register':
      return to('pending')
    case 'attest':
      return to('ok')
    case 'verify':
      return event.registered ? to('ok') : NOT_ALLOWED
    default:
      return NOT_ALLOWED
  }
}

function documentEvidence(from: KycStatus, event: KycEvent): KycTransition {
  const open = from === 'pending' || from === 'failed'
  switch (event.type) {
    case 'submit':
      return open ? to('running') : NOT_ALLOWED
    case 'attach':
      return open ? to('pending') : NOT_ALLOWED
    case 'attest':
      return open ? to(event.approved ? 'ok' : 'failed') : NOT_ALLOWED
    case 'derive':
      return open ? to('ok') : NOT_ALLOWED
    case 'conclude':
      return from === 'running' ? to(event.approved ? 'ok' : 'failed') : NOT_ALLOWED
    case 'abort':
      return from === 'running' ? to('pending') : NOT_ALLOWED
    default:
      return NOT_ALLOWED
  }
}

function form(from: KycStatus, event: KycEvent): KycTransition {
  if (event.type === 'expire') return from === 'ok' ? to('pending') : NOT_ALLOWED
  if (from === 'ok') return refuse('form-already-completed')
  if (from === 'running') return NOT_ALLOWED
  switch (event.type) {
    case 'answer':
      if (from === 'failed' && !event.attemptsLeft) return NOT_ALLOWED
      return to('pending')
    case 'attest':
      if (from === 'failed' && event.attemptsLeft === false) return NOT_ALLOWED
      return to(event.approved ? 'ok' : event.retry ? 'pending' : 'failed')
    case 'review':
      return from === 'pending' ? to(event.approved ? 'ok' : event.retry ? 'pending' : 'failed') : NOT_ALLOWED
    default:
      return NOT_ALLOWED
  }
}

function automatic(from: KycStatus, event: KycEvent): KycTransition {
  if (event.type === 'conclude' && from === 'pending') return to(event.approved ? 'ok' : 'failed')
  return NOT_ALLOWED
}

export type KycSummaryStatus = 'blocked' | 'ok' | 'pending' | 'restricted'
export interface KycSummary {
  status: KycSummaryStatus
  reason: string
}

export interface SummaryFacts {
  /** The user's residence is closed to service by this deployment's country restrictions. */
  residenceRestricted: boolean
  /** Failed processes that can no longer be retried (e.g. a form whose attempts are used up). */
  finalFailures: readonly KycProcessCode[]
}

/**
 * The overall KYC status. Blocked: screening or risk rejected the user, or a process failed for good.
 * Restricted: the user lives where this deployment may not serve. Ok: every process ok or exempt.
 */
export function summarize(statuses: Readonly<Record<KycProcessCode, KycStatus>>, facts: SummaryFacts): KycSummary {
  for (const code of ['screening', 'risk'] as const) {
    if (statuses[code] === 'failed') return { status: 'blocked', reason: `${code}-rejected` }
  }
  const final = KYC_PROCESS_CODES.find((code) => statuses[code] === 'failed' && facts.finalFailures.includes(code))
  if (final) return { status: 'blocked', reason: `${final}-failed` }
  if (facts.residenceRestricted) return { status: 'restricted', reason: 'residence-country-restricted' }
  const done = KYC_PROCESS_CODES.every((code) => statuses[code] === 'ok' || statuses[code] === 'exempt')
  return { status: done ? 'ok' : 'pending', reason: 'none' }
}

/** What a new user's creation declared, from which each process starts. */
export interface DeclaredFacts {
  profileComplete: boolean
  addressComplete: boolean
  residenceCountry: string
}

/** Countries whose residents must give a self-categorization statement (an FCA rule for UK consumers). */
export const SELF_CATEGORIZATION_COUNTRIES: ReadonlySet<string> = new Set(['GB'])

/** The status a process has before anything happened to it. */
export function initialStatus(code: KycProcessCode, facts: DeclaredFacts): KycStatus {
  switch (code) {
    case 'profile':
      return facts.profileComplete ? 'ok' : 'pending'
    case 'address':
      return facts.addressComplete ? 'ok' : 'pending'
    case 'self-categorization-statement':
      return SELF_CATEGORIZATION_COUNTRIES.has(facts.residenceCountry) ? 'pending' : 'exempt'
    case 'enhanced-due-diligence':
      // Only required once customer due diligence scores the user as high risk.
      return 'exempt'
    default:
      return 'pending'
  }
}
