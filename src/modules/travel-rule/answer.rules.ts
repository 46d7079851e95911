/**
 * What an answer to a travel-rule request for information must say: pure, no I/O. The answer is the `data` a client
 * (or the travel-rule widget) sends, in the shape the travel-rule network uses — an IVMS 101 description of the
 * other party, and a proof that the user controls their own wallet where the other party is the user themself.
 * Anything else the network adds is kept as it came. See docs/travel-rule.md.
 *
 * - The other party is the originator of a deposit and the beneficiary of a withdrawal.
 * - Either it is the user themself (`originatorEqualsBeneficiary: true`, or `value.counterparty.type: 'self'`): then
 *   `proof` must show that they control the address — a confirmed self-declaration (`type: 'self-declaration'`,
 *   `confirmed: true`), or a message signed with the address's key (`type` the signature scheme, `address`,
 *   `attestation` the message, `proof` the signature, `publicKey` where the network needs it);
 * - or it is someone else, described in `ivms101.originator.originatorPersons` / `ivms101.beneficiary.beneficiaryPersons`:
 *   at least one natural person (a primary identifier) or legal person (a legal person name).
 */

export interface Violation {
  property: string
  rule: string
  ruleParams?: Record<string, unknown>
}

export type Direction = 'deposit' | 'withdrawal'

/** A proof that the user controls the address. */
export type OwnershipProof =
  | { kind: 'self-declaration' }
  | { kind: 'signature'; type: string; address: string; message: string; signature: string; publicKey?: string }

export interface Answer {
  counterparty: 'self' | 'other'
  /** The other party's names, as given (for screening). */
  names: string[]
  proof: OwnershipProof | null
}

const MAX_NAME_LENGTH = 200
const MAX_PERSONS = 10

type Json = Record<string, unknown>
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value)
const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined)

/** An address as the network writes it, without a CAIP-10 prefix (`xrpl:0:rAddress` → `rAddress`). */
export function bareAddress(address: string): string {
  const parts = address.split(':')
  return parts[parts.length - 1]!
}

/** Whether the answer says the other party is the user themself. */
function isSelf(data: Json): boolean {
  const value = isObject(data.value) ? data.value : undefined
  const counterparty = value && isObject(value.counterparty) ? value.counterparty : undefined
  const update = isObject(data.proof) && isObject(data.proof.txUpdate) ? data.proof.txUpdate : undefined
  return data.originatorEqualsBeneficiary === true || counterparty?.type === 'self' || update?.originatorEqualsBeneficiary === true
}

function personName(person: unknown): string | undefined {
  if (!isObject(person)) return undefined
  const natural = isObject(person.naturalPerson) ? person.naturalPerson : undefined
  const legal = isObject(person.legalPerson) ? person.legalPerson : undefined
  const identifiers = (holder: Json | undefined): unknown[] => {
    const name = holder && isObject(holder.name) ? holder.name : undefined
    return name && Array.isArray(name.nameIdentifier) ? name.nameIdentifier : []
  }
  for (const identifier of identifiers(natural)) {
    if (!isObject(identifier)) continue
    const primary = text(identifier.primaryIdentifier)
    if (primary !== undefined) return [text(identifier.secondaryIdentifier), primary].filter(Boolean).join(' ')
  }
  for (const identifier of identifiers(legal)) {
    if (isObject(identifier) && text(identifier.legalPersonName) !== undefined) return text(identifier.legalPersonName)
  }
  return undefined
}

function proofOf(data: Json, violations: Violation[]): OwnershipProof | null {
  if (data.proof === undefined) return null
  const proof = data.proof
  if (!isObject(proof)) {
    violations.push({ property: 'data.proof', rule: 'type', ruleParams: { type: 'object' } })
    return null
  }
  if (proof.type === 'self-declaration') {
    if (proof.confirmed !== true) violations.push({ property: 'data.proof.confirmed', rule: 'const', ruleParams: { allowedValue: true } })
    return { kind: 'self-declaration' }
  }
  const type = text(proof.type)
  if (type === undefined) {
    violations.push({ property: 'data.proof.type', rule: 'required' })
    return null
  }
  const missing = (['address', 'attestation', 'proof'] as const).filter((field) => text(proof[field]) === undefined)
  for (const field of missing) violations.push({ property: `data.proof.${field}`, rule: 'required' })
  if (missing.length > 0) return null
  const publicKey = text(proof.publicKey)
  return {
    kind: 'signature',
    type,
    address: bareAddress(text(proof.address)!),
    message: proof.attestation as string,
    signature: text(proof.proof)!,
    ...(publicKey !== undefined ? { publicKey } : {}),
  }
}

/** The answer's meaning, or the violations that make it no answer (reported as a 400 `request_invalid`). */
export function readAnswer(direction: Direction, data: Json): { answer: Answer } | { violations: Violation[] } {
  const violations: Violation[] = []
  const proof = proofOf(data, violations)
  const self = isSelf(data)
  const names: string[] = []
  const [side, list] = direction === 'deposit' ? ['originator', 'originatorPersons'] : ['beneficiary', 'beneficiaryPersons']
  const ivms = isObject(data.ivms101) ? data.ivms101 : undefined
  const party = ivms && isObject(ivms[side]) ? (ivms[side] as Json) : undefined
  const persons = party && Array.isArray(party[list]) ? (party[list] as unknown[]) : undefined
  if (persons !== undefined) {
    if (persons.length > MAX_PERSONS) violations.push({ property: `data.ivms101.${side}.${list}`, rule: 'maxItems', ruleParams: { limit: MAX_PERSONS } })
    persons.slice(0, MAX_PERSONS).forEach((person, index) => {
      const name = personName(person)
      if (name === undefined) violations.push({ property: `data.ivms101.${side}.${list}.${index}`, rule: 'required', ruleParams: { oneOf: ['naturalPerson.name.nameIdentifier.0.primaryIdentifier', 'legalPerson.name.nameIdentifier.0.legalPersonName'] } })
      else if (name.length > MAX_NAME_LENGTH) violations.push({ property: `data.ivms101.${side}.${list}.${index}`, rule: 'maxLength', ruleParams: { limit: MAX_NAME_LENGTH } })
      else names.push(name)
    })
  }
  if (self) {
    if (proof === null && !violations.some((violation) => violation.property.startsWith('data.proof'))) violations.push({ property: 'data.proof', rule: 'required' })
  } else if (names.length === 0 && !violations.some((violation) => violation.property.startsWith(`data.ivms101.${side}`))) {
    violations.push({ property: `data.ivms101.${side}.${list}`, rule: 'required' })
  }
  if (violations.length > 0) return { violations }
  return { answer: { counterparty: self ? 'self' : 'other', names, proof } }
}
