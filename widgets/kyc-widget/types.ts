/** The JSON shapes the KYC widget reads from Tessera's API (a subset of the OpenAPI schemas). */

export type KycProcess = 'profile' | 'identity' | 'proof-of-address'
export type KycStatus = 'pending' | 'running' | 'ok' | 'failed' | 'exempt'

export type { WidgetError } from '../shared/types.ts'

export interface Address {
  country: string
  subdivision?: string
  city?: string
  line1?: string
  line2?: string
  postalCode?: string
}

/** Whether a profile field is asked for, and whether an update may change it (`verification.rules`). */
export interface FieldRule {
  presence: 'required' | 'optional' | 'disallowed'
  editable: boolean
  rules?: Record<string, FieldRule>
}

export interface ProfileInput {
  fullName?: string
  birthdate?: string
  birthplace?: { country: string; town: string }
  primaryCitizenship?: string
  otherCitizenships?: string[]
  address?: Address
}

export interface ProcessView {
  code: string
  status: KycStatus
  type?: string
  verification?: { model?: string; rules?: Record<string, FieldRule> }
  input?: Record<string, unknown>
  output?: { reason?: string } & Record<string, unknown>
}

export interface ProfileView extends ProcessView {
  input?: ProfileInput & Record<string, unknown>
}

export interface UploadRule {
  category: string
  allowedContentTypes: string[]
  minFileSize: number
  maxFileSize: number
  media: { context: string; required: boolean }[]
}

/** `GET /widgets/kyc/sessions/current` */
export interface CurrentSession {
  session: { flow: string; data: { processes: KycProcess[] }; expiresAt: string }
  processes: { profile?: ProfileView; identity?: ProcessView; 'proof-of-address'?: ProcessView }
  uploads: { identity?: UploadRule; 'proof-of-address'?: UploadRule }
}

/** `POST /core/files` */
export interface CreatedFile {
  file: { id: string; upload: { url: string; formData: Record<string, string> } }
}

/** What `complete` carries: each process of the session and where it stands. */
export interface ProcessOutcome {
  code: KycProcess
  status: KycStatus
  reason?: string
}
