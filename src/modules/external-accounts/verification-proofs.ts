/**
 * The proofs a crypto external account's verifications take, pure: the self-declaration's JSON schema (served in
 * `proofOptions.selfDeclaration.schema` and enforced by the very same object, through Ajv), the shape of a signed
 * message, and the text the user signs for the `verified` level. Docs: docs/external-accounts.md#verifications.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { toViolations, type SchemaError } from '../../http/violations.ts'
import type { Violation } from '../../lib/errors.ts'
import { SIGNATURE_LIMITS } from '../../lib/signatures/index.ts'

export interface SelfDeclaration {
  isVASP: boolean
  isSelfHostedWallet: boolean
  isSelfOwnedCryptoAddress: boolean
}

export interface SignatureProof {
  signature: string
  publicKey?: string
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}

/**
 * What the user declares of the address, for the travel rule. A service provider's address (an exchange's, a
 * custodian's) is not a self-hosted wallet: both at once are refused, by the schema itself, so that a form built
 * from the schema refuses it too.
 */
export const SELF_DECLARATION_SCHEMA = deepFreeze({
  type: 'object',
  title: 'Self-declaration of a crypto address',
  properties: {
    isVASP: { type: 'boolean', description: 'Whether the address belongs to a virtual asset service provider (an exchange, a custodian).' },
    isSelfHostedWallet: { type: 'boolean', description: 'Whether the address is of a wallet whose keys the user keeps themselves.' },
    isSelfOwnedCryptoAddress: { type: 'boolean', description: 'Whether the address is the user\'s own (rather than a third party\'s).' },
  },
  required: ['isVASP', 'isSelfHostedWallet', 'isSelfOwnedCryptoAddress'],
  additionalProperties: false,
  if: { properties: { isVASP: { const: true } }, required: ['isVASP'] },
  then: { properties: { isSelfHostedWallet: { const: false } } },
} as const)

/** A signature of the verification's message by the address's key. */
export const SIGNATURE_PROOF_SCHEMA = deepFreeze({
  type: 'object',
  title: 'Signed message',
  properties: {
    signature: {
      type: 'string',
      minLength: 1,
      maxLength: SIGNATURE_LIMITS.signature,
      description: 'The signature of `proofOptions.messageSigning.message`, as the wallet gives it (base64 for Bitcoin and Litecoin, 0x-hex for Ethereum, base58, base64 or hex for Solana, hex for the XRP Ledger).',
    },
    publicKey: {
      type: 'string',
      minLength: 1,
      maxLength: SIGNATURE_LIMITS.publicKey,
      description: 'The public key that signed, for schemes whose signature does not carry it (the XRP Ledger): hex.',
    },
  },
  required: ['signature'],
  additionalProperties: false,
} as const)

const ajv = new Ajv({ allErrors: true, strict: false })
const signedMessage = ajv.compile(SIGNATURE_PROOF_SCHEMA)
// By the schema's text: a verification enforces the schema it serves (stored with it), compiled once.
const compiled = new Map<string, ValidateFunction>()

function violationsOf(validate: ValidateFunction, proof: unknown): Violation[] {
  if (validate(proof)) return []
  // An `if` failure only says that its `then` failed, which is reported on its own.
  const errors = (validate.errors ?? []).filter((error: ErrorObject) => error.keyword !== 'if') as SchemaError[]
  return toViolations(errors).map((violation) => ({ ...violation, property: violation.property === '' ? 'proof' : `proof.${violation.property}` }))
}

/** Violations of a self-declaration against the schema the verification serves, named from the body (`proof.isVASP`). */
export function selfDeclarationViolations(schema: object, proof: unknown): Violation[] {
  const key = JSON.stringify(schema)
  let validate = compiled.get(key)
  if (!validate) {
    validate = ajv.compile(structuredClone(schema))
    compiled.set(key, validate)
  }
  return violationsOf(validate, proof)
}

/** Violations of a signed message's shape (`proof.signature`). */
export function signedMessageViolations(proof: unknown): Violation[] {
  return violationsOf(signedMessage, proof)
}

/**
 * The text the user signs for the `verified` level: it names the address and the network, says what signing it
 * means (and does not: it moves nothing), and ends with a nonce, so that every verification signs a message of its
 * own and a signature given once cannot be replayed for another. It names no organization: the same product text
 * whoever runs the deployment.
 */
export function signingMessage(input: { network: string; address: string; nonce: string }): string {
  return [
    'Crypto address verification',
    '',
    'I confirm that I control the address below and hold the key that signs for it.',
    'Signing this message proves control of the address only: it authorizes no transaction.',
    '',
    `Network: ${input.network}`,
    `Address: ${input.address}`,
    `Nonce: ${input.nonce}`,
  ].join('\n')
}
