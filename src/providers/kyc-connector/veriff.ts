import { createHmac, timingSafeEqual } from 'node:crypto'
import {
  callProvider,
  providerJson,
  type DownloadedFile,
  type IdentityData,
  type ProviderAddress,
  type ProviderFile,
  type ProviderRecord,
  type Readiness,
  type VeriffCredentials,
  type VeriffSource,
} from './connector.ts'

/** Veriff's answer to `GET /v1/sessions/{sessionId}/decision` (the fields Tessera reads). */
export interface VeriffDecisionResponse {
  status: string
  verification: VeriffVerification | null
}

export interface VeriffVerification {
  id: string
  status: string
  code?: number | null
  reason?: string | null
  decisionTime?: string | null
  acceptanceTime?: string | null
  person?: {
    firstName?: string | null
    lastName?: string | null
    dateOfBirth?: string | null
    gender?: string | null
    nationality?: string | null
    placeOfBirth?: string | null
    addresses?: { fullAddress?: string | null; parsedAddress?: VeriffParsedAddress | null }[] | null
  } | null
  document?: { number?: string | null; type?: string | null; country?: string | null; validFrom?: string | null; validUntil?: string | null } | null
}

export interface VeriffParsedAddress {
  city?: string | null
  unit?: string | null
  state?: string | null
  street?: string | null
  country?: string | null
  postcode?: string | null
  houseNumber?: string | null
}

export interface VeriffMedia {
  id: string
  name?: string | null
  context: string
  mimetype: string
  size?: number | null
}

/** Veriff's answer to `GET /v1/sessions/{sessionId}/media`. */
export interface VeriffMediaResponse {
  status: string
  images: VeriffMedia[]
  videos: VeriffMedia[]
}

/** Veriff's API as Tessera uses it: the HTTP client below, or the sandbox simulator. */
export interface VeriffApi {
  decision(credentials: VeriffCredentials, sessionId: string): Promise<VeriffDecisionResponse>
  media(credentials: VeriffCredentials, sessionId: string): Promise<VeriffMediaResponse>
  mediaContent(credentials: VeriffCredentials, mediaId: string): Promise<DownloadedFile>
}

/** Veriff's signature: the hex HMAC-SHA256, under the integration's shared secret, of a body or of the id a GET names. */
export function veriffSignature(sharedSecretKey: string, payload: string | Buffer): string {
  return createHmac('sha256', sharedSecretKey).update(payload).digest('hex')
}

/** Whether `signature` (an `X-HMAC-SIGNATURE` header) is Veriff's signature of `payload` under the secret, compared in constant time. */
export function verifyVeriffSignature(sharedSecretKey: string, payload: string | Buffer, signature: string | undefined): boolean {
  if (signature === undefined || !/^[0-9a-fA-F]{64}$/.test(signature)) return false
  return timingSafeEqual(Buffer.from(veriffSignature(sharedSecretKey, payload), 'hex'), Buffer.from(signature, 'hex'))
}

/** The session a Veriff callback is about: a decision callback's `verification.id`, an event callback's `id`. */
export function veriffCallbackSession(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return null
  const record = body as { id?: unknown; sessionId?: unknown; verification?: { id?: unknown } | null }
  const id = record.verification?.id ?? record.sessionId ?? record.id
  return typeof id === 'string' && id.length <= 64 ? id.toLowerCase() : null
}

// Decided and not approved: Veriff will not approve this session any more.
const REJECTED = new Set(['declined', 'resubmission_requested', 'expired', 'abandoned'])

const DOCUMENT_TYPES: Record<string, NonNullable<IdentityData['document']>['type']> = {
  PASSPORT: 'passport',
  ID_CARD: 'id-card',
  DRIVERS_LICENSE: 'driving-license',
  RESIDENCE_PERMIT: 'residence-permit',
}

/** Veriff's media contexts Tessera imports, with the process and KYC context they become. */
const MEDIA_CONTEXTS: Record<string, { process: ProviderFile['process']; context: string; category: ProviderFile['category'] }> = {
  'document-front': { process: 'identity', context: 'photo-document-front', category: 'document' },
  'document-back': { process: 'identity', context: 'photo-document-back', category: 'document' },
  face: { process: 'identity', context: 'photo-selfie', category: 'image' },
  'document-and-face': { process: 'identity', context: 'photo-selfie-and-document-front', category: 'image' },
  'selfid_video': { process: 'identity', context: 'video', category: 'video' },
  'face-pre-video': { process: 'identity', context: 'video', category: 'video' },
  'address-front': { process: 'proof-of-address', context: 'address-proof', category: 'document' },
}

const text = (value: string | null | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed ? trimmed : undefined
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T
}

function addressOf(parsed: VeriffParsedAddress | null | undefined): ProviderAddress | null {
  if (!parsed) return null
  const street = [text(parsed.houseNumber), text(parsed.street)].filter(Boolean).join(' ')
  const address = definedOnly({
    country: text(parsed.country)?.toUpperCase(),
    city: text(parsed.city),
    line1: street || undefined,
    line2: text(parsed.unit),
    postalCode: text(parsed.postcode),
  })
  return Object.keys(address).length > 0 ? address : null
}

/** What an approved session holds, in the shapes of an ingestion's result. */
export function veriffRecord(verification: VeriffVerification, media: VeriffMediaResponse): ProviderRecord {
  const person = verification.person ?? {}
  const verifiedAt = text(verification.decisionTime) ?? undefined
  const givenName = text(person.firstName)
  const familyName = text(person.lastName)
  const birthdate = text(person.dateOfBirth)
  const address = addressOf(person.addresses?.[0]?.parsedAddress)
  const gender = person.gender === 'M' ? 'male' : person.gender === 'F' ? 'female' : undefined
  const files: ProviderFile[] = [...media.images, ...media.videos].flatMap((item) => {
    const role = MEDIA_CONTEXTS[item.context]
    return role ? [{ ...role, locator: item.id, contentType: item.mimetype.toLowerCase(), providerDetails: { mediaId: item.id } }] : []
  })
  const fullName = [givenName, familyName].filter(Boolean).join(' ')
  const profile = definedOnly({
    fullName: fullName || undefined,
    birthdate,
    birthplace: text(person.placeOfBirth) ? { town: text(person.placeOfBirth) } : undefined,
    primaryCitizenship: text(person.nationality)?.toUpperCase(),
  })
  const document = verification.document
  const identity: IdentityData | null = document || givenName
    ? (definedOnly({
      document: document
        ? definedOnly({
          type: DOCUMENT_TYPES[document.type ?? ''] ?? 'unsupported',
          number: text(document.number),
          country: text(document.country)?.toUpperCase(),
          expiresAt: text(document.validUntil),
        })
        : undefined,
      person: definedOnly({ givenName, familyName, birthdate, gender }),
      verifiedAt,
    }) as IdentityData)
    : null
  // A proof of address is a document of the session read for it: without one, the session proves no address.
  const proofOfAddress = address && files.some((file) => file.process === 'proof-of-address')
    ? { person: definedOnly({ givenName, familyName, address }), ...(verifiedAt ? { verifiedAt } : {}) }
    : null
  return {
    profile: Object.keys(profile).length > 0 ? profile : null,
    address,
    identity,
    proofOfAddress,
    files,
  }
}

/** Reads sessions through Veriff's API (real or simulated). */
export class VeriffReader implements VeriffSource {
  private readonly api: VeriffApi

  constructor(api: VeriffApi) {
    this.api = api
  }

  async read(credentials: VeriffCredentials, sessionId: string): Promise<Readiness> {
    const decision = await this.api.decision(credentials, sessionId)
    const verification = decision.verification
    if (!verification || verification.status === 'review' || verification.status === 'submitted' || verification.status === 'started' || verification.status === 'created') {
      return { state: 'pending' }
    }
    if (REJECTED.has(verification.status) || verification.status !== 'approved') {
      return { state: 'rejected', message: `The Veriff session was not approved (${verification.status})` }
    }
    return { state: 'ready', record: veriffRecord(verification, await this.api.media(credentials, sessionId)) }
  }

  download(credentials: VeriffCredentials, file: ProviderFile): Promise<DownloadedFile> {
    return this.api.mediaContent(credentials, file.locator)
  }
}

/**
 * Veriff's API over HTTP: each call carries the integration's API key (`X-AUTH-CLIENT`) and the signature of the
 * id it names (`X-HMAC-SIGNATURE`). A 4xx is the provider refusing (`ProviderClientError`); anything else that
 * fails may pass later (`ProviderUnavailableError`).
 */
export class VeriffHttpApi implements VeriffApi {
  private readonly baseUrl: string
  private readonly timeoutMs: number

  constructor(options: { baseUrl: string; timeoutMs?: number }) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.timeoutMs = options.timeoutMs ?? 15_000
  }

  private get(credentials: VeriffCredentials, path: string, signed: string): Promise<Response> {
    return callProvider('Veriff', `${this.baseUrl}${path}`, {
      headers: { 'x-auth-client': credentials.apiKey, 'x-hmac-signature': veriffSignature(credentials.sharedSecretKey, signed), accept: '*/*' },
      timeoutMs: this.timeoutMs,
    })
  }

  private async json<T>(credentials: VeriffCredentials, path: string, signed: string): Promise<T> {
    return providerJson<T>('Veriff', await this.get(credentials, path, signed))
  }

  decision(credentials: VeriffCredentials, sessionId: string): Promise<VeriffDecisionResponse> {
    return this.json(credentials, `/v1/sessions/${encodeURIComponent(sessionId)}/decision`, sessionId)
  }

  async media(credentials: VeriffCredentials, sessionId: string): Promise<VeriffMediaResponse> {
    const body = await this.json<Partial<VeriffMediaResponse>>(credentials, `/v1/sessions/${encodeURIComponent(sessionId)}/media`, sessionId)
    return { status: body.status ?? 'success', images: body.images ?? [], videos: body.videos ?? [] }
  }

  async mediaContent(credentials: VeriffCredentials, mediaId: string): Promise<DownloadedFile> {
    const response = await this.get(credentials, `/v1/media/${encodeURIComponent(mediaId)}`, mediaId)
    const contentType = (response.headers.get('content-type') ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase()
    return { content: Buffer.from(await response.arrayBuffer()), contentType }
  }
}
