import Type, { type Static } from 'typebox'
import { component, Timestamp } from '../../http/schemas.ts'
import { KycIdentity, KycProfile, KycProofOfAddress } from '../kyc/index.ts'

/** The processes the hosted KYC widget walks a user through, in the order it walks them. */
import { KYC_WIDGET_PROCESSES } from '../kyc/index.ts'

export { KYC_WIDGET_PROCESSES }
export type KycWidgetProcess = (typeof KYC_WIDGET_PROCESSES)[number]

const Process = Type.Enum([...KYC_WIDGET_PROCESSES])

export const CreateKycWidgetSessionBody = component(
  'create-kyc-widget-session-verify-flow',
  Type.Object(
    {
      flow: Type.Literal('verify', { description: 'The flow of the session: `verify` walks the user through KYC processes.' }),
      processes: Type.Optional(
        Type.Array(Process, {
          minItems: 1,
          uniqueItems: true,
          description:
            'The processes the widget walks the user through, always in the order profile, identity, proof of address. ' +
            'Without it: those the user still has to submit (a pending profile; an identity or proof of address that is ' +
            'pending or failed).',
        }),
      ),
    },
    { additionalProperties: false, description: 'Verify the user: the widget collects what the processes need and submits it.' },
  ),
)
export type CreateKycWidgetSessionBody = Static<typeof CreateKycWidgetSessionBody>

const SessionData = Type.Object(
  { processes: Type.Array(Process, { description: 'The processes of the session, in the order the widget walks them (may be empty: nothing left to submit).' }) },
  { description: 'What the session covers.' },
)

export const KycWidgetSession = component(
  'kyc-widget-session',
  Type.Object(
    {
      flow: Type.Literal('verify', { description: 'The flow the session is for.' }),
      data: SessionData,
      url: Type.String({ format: 'uri', description: 'The page to load in the widget\'s frame (the widget SDK does).' }),
      token: Type.String({
        description: 'The session\'s credential, handed to the widget only: it acts for this user alone, on the session\'s processes, for a short time.',
      }),
    },
    { description: 'A KYC widget session, handed to the widget SDK as it is.' },
  ),
)

export const CreateKycWidgetSessionResponse = component('create-kyc-widget-session-response', Type.Object({ session: KycWidgetSession }))

const UploadRule = Type.Object(
  {
    category: Type.Enum(['image', 'document'], { description: 'The category of the files to create (`POST /core/files`).' }),
    allowedContentTypes: Type.Array(Type.String(), { description: 'Media types the category accepts.' }),
    minFileSize: Type.Integer({ description: 'Smallest accepted file, in bytes.' }),
    maxFileSize: Type.Integer({ description: 'Largest accepted file, in bytes.' }),
    media: Type.Array(
      Type.Object({
        context: Type.String({ description: 'The `context` of the file in the process\'s `input.media`.' }),
        required: Type.Boolean({ description: 'Whether the submission needs it.' }),
      }),
      { description: 'The files the widget asks for, in order.' },
    ),
  },
  { description: 'What a document submission takes.' },
)

export const CurrentKycWidgetSessionResponse = component(
  'current-kyc-widget-session-response',
  Type.Object(
    {
      session: Type.Object({
        flow: Type.Literal('verify'),
        data: SessionData,
        expiresAt: Timestamp,
      }),
      processes: Type.Object(
        {
          profile: Type.Optional(KycProfile),
          identity: Type.Optional(KycIdentity),
          'proof-of-address': Type.Optional(KycProofOfAddress),
        },
        { description: 'The session\'s processes as they are now (as `GET /core/kyc` shows them), by process code: only those of the session.' },
      ),
      uploads: Type.Object(
        { identity: Type.Optional(UploadRule), 'proof-of-address': Type.Optional(UploadRule) },
        { description: 'For the session\'s document processes: the files the widget uploads before it submits them.' },
      ),
    },
    { description: 'The KYC widget session its token was issued for, and the user\'s processes it covers: for the hosted KYC widget page.' },
  ),
)
