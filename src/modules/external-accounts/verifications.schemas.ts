import Type, { type Static } from 'typebox'
import { component, Uuid } from '../../http/schemas.ts'
import type { SignatureScheme } from '../../lib/signatures/index.ts'
import { VerificationSummary } from './external-accounts.schemas.ts'
import { VERIFICATION_LEVELS, type VerificationLevel } from './verification.machine.ts'

/** The signature schemes Tessera verifies (src/lib/signatures), as recorded in a verified level's proof. */
export const SIGNATURE_SCHEMES = ['bip-137', 'bip-322', 'eip-191', 'ed25519', 'xrpl'] as const satisfies readonly SignatureScheme[]

const Level = Type.Unsafe<VerificationLevel>(Type.String({ enum: [...VERIFICATION_LEVELS], description: '`declared`: the user says what the address is (travel rule); `verified`: the user signs a message with its key.' }))

const DeclaredAnswers = Type.Object(
  {
    isVASP: Type.Boolean(),
    isSelfHostedWallet: Type.Boolean(),
    isSelfOwnedCryptoAddress: Type.Boolean(),
  },
  { description: 'What the user declared of the address.' },
)

const RecordedSignature = Type.Object(
  {
    scheme: Type.Unsafe<(typeof SIGNATURE_SCHEMES)[number]>(Type.String({ enum: [...SIGNATURE_SCHEMES], description: 'How the signature was verified.' })),
    signature: Type.String({ description: 'The signature, as given.' }),
    publicKey: Type.Optional(Type.String({ description: 'The public key, when one was given.' })),
  },
  { description: 'The signature that verified the address.' },
)

const ProofOptions = Type.Object(
  {
    selfDeclaration: Type.Optional(
      Type.Object(
        { schema: Type.Object({}, { additionalProperties: true, description: 'The JSON schema (draft 7) the declaration must match: the one the answer is validated against.' }) },
        { description: 'Declared level: the user answers the schema\'s questions.' },
      ),
    ),
    messageSigning: Type.Optional(
      Type.Object(
        { message: Type.String({ description: 'The text to sign with the address\'s key, exactly: it names the address, the network and a nonce of this verification.' }) },
        { description: 'Verified level: the user signs the message with the address\'s key.' },
      ),
    ),
  },
  { description: 'How the request for information is answered.' },
)

export const RequestForInformation = component(
  'external-account-request-for-information',
  Type.Object(
    {
      id: Uuid,
      type: Type.Union([Type.Literal('crypto-address-travel-rule'), Type.Literal('crypto-address-verification')], {
        description: '`crypto-address-travel-rule` for the declared level, `crypto-address-verification` for the verified level.',
      }),
      status: Type.Union([Type.Literal('ok'), Type.Literal('pending')], { description: '`ok` once answered with a proof that holds.' }),
      context: Type.Object(
        {
          network: Type.String({ description: 'The network of the address.' }),
          addresses: Type.Array(Type.String(), { description: 'The address, as the external account has it.' }),
        },
        { description: 'What is asked about.' },
      ),
      proofOptions: ProofOptions,
      proof: Type.Optional(Type.Union([DeclaredAnswers, RecordedSignature], { description: 'The proof that answered it, once answered.' })),
    },
    { description: 'What the user is asked to prove of the address, and how.' },
  ),
)

export const Verification = component(
  'external-account-verification',
  Type.Object(
    { ...VerificationSummary.properties, requestForInformation: RequestForInformation },
    { description: 'A verification of a crypto external account, with its request for information.' },
  ),
)
export type Verification = Static<typeof Verification>

export const VerificationResponse = component('external-account-verification-response', Type.Object({ verification: Verification }))
export const ListVerificationsResponse = component(
  'list-external-account-verifications-response',
  Type.Object({ verifications: Type.Array(Verification, { description: 'One per level ever started: `declared` first.' }) }),
)

export const StartVerificationBody = component(
  'start-external-account-verification-request',
  Type.Object({ level: Level }, { additionalProperties: false }),
)
export type StartVerificationBody = Static<typeof StartVerificationBody>

export const AnswerVerificationBody = component(
  'answer-external-account-verification-request',
  Type.Object(
    {
      proof: Type.Object({}, {
        additionalProperties: true,
        description:
          'The proof, by level. `declared`: an object matching the verification\'s `proofOptions.selfDeclaration.schema` ' +
          '(the booleans `isVASP`, `isSelfHostedWallet`, `isSelfOwnedCryptoAddress`; a service provider\'s address is not a ' +
          'self-hosted wallet). `verified`: `{signature, publicKey?}`, the signature of `proofOptions.messageSigning.message` ' +
          'by the address\'s key (`publicKey`, hex, where the scheme needs it: the XRP Ledger).',
        examples: [
          { isVASP: false, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true },
          { signature: '<the signature, as the wallet gives it>' },
        ],
      }),
    },
    { additionalProperties: false },
  ),
)
export type AnswerVerificationBody = Static<typeof AnswerVerificationBody>

export const VerificationParams = Type.Object({
  externalAccountId: Type.String({ format: 'uuid', description: 'The id of the external account.' }),
  level: Level,
})
