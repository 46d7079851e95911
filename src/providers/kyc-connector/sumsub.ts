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
  type SumsubSource,
} from './connector.ts'
import { alpha2Of } from './countries.ts'

/** A Sumsub applicant (the fields Tessera reads); countries are ISO 3166-1 alpha-3. */
export interface SumsubApplicant {
  id: string
  inspectionId?: string | null
  createdAt?: string | null
  info?: {
    firstName?: string | null
    lastName?: string | null
    dob?: string | null
    gender?: string | null
    placeOfBirth?: string | null
    countryOfBirth?: string | null
    nationality?: string | null
    country?: string | null
    addresses?: SumsubAddress[] | null
    idDocs?: { idDocType?: string | null; country?: string | null; number?: string | null; validUntil?: string | null }[] | null
  } | null
  review?: { reviewStatus?: string | null; reviewDate?: string | null; reviewResult?: { reviewAnswer?: string | null } | null } | null
}

export interface SumsubAddress {
  country?: string | null
  postCode?: string | null
  town?: string | null
  street?: string | null
  subStreet?: string | null
  buildingNumber?: string | null
  flatNumber?: string | null
}

/** One document image of an applicant (`GET /resources/applicants/{id}/metadata/resources`). */
export interface SumsubResource {
  id: string
  idDocDef?: { idDocType?: string | null; idDocSubType?: string | null; country?: string | null } | null
  fileMetadata?: { fileType?: string | null; fileSize?: number | null } | null
  deactivated?: boolean | null
}

/** Sumsub's API as Tessera uses it, with the deployment's app token: the HTTP client below, or the sandbox simulator. */
export interface SumsubApi {
  importApplicant(shareToken: string): Promise<SumsubApplicant>
  applicant(applicantId: string): Promise<SumsubApplicant>
  resources(applicantId: string): Promise<{ items: SumsubResource[] }>
  image(inspectionId: string, imageId: string): Promise<DownloadedFile>
}

export const SUMSUB_DIGEST_ALGORITHMS = { HMAC_SHA1_HEX: 'sha1', HMAC_SHA256_HEX: 'sha256', HMAC_SHA512_HEX: 'sha512' } as const

/** Sumsub's callback digest: the hex HMAC of the raw body under the webhook secret, with the algorithm the header names. */
export function sumsubDigest(secret: string, body: string | Buffer, algorithm: keyof typeof SUMSUB_DIGEST_ALGORITHMS = 'HMAC_SHA256_HEX'): string {
  return createHmac(SUMSUB_DIGEST_ALGORITHMS[algorithm], secret).update(body).digest('hex')
}

/**
 * Whether a callback's `X-Payload-Digest` is Sumsub's digest of the raw body under the secret, with the algorithm
 * `X-Payload-Digest-Alg` names (SHA-1 when absent, as Sumsub's oldest callbacks), compared in constant time.
 */
export function verifySumsubDigest(secret: string, body: string | Buffer, digest: string | undefined, algorithm: string | undefined): boolean {
  const name = (algorithm ?? 'HMAC_SHA1_HEX').toUpperCase()
  if (!Object.hasOwn(SUMSUB_DIGEST_ALGORITHMS, name) || digest === undefined || !/^[0-9a-fA-F]+$/.test(digest)) return false
  const expected = Buffer.from(sumsubDigest(secret, body, name as keyof typeof SUMSUB_DIGEST_ALGORITHMS), 'hex')
  const given = Buffer.from(digest, 'hex')
  return given.length === expected.length && timingSafeEqual(expected, given)
}

/** The applicant a Sumsub callback is about. */
export function sumsubCallbackApplicant(body: unknown): string | null {
  const id = typeof body === 'object' && body !== null ? (body as { applicantId?: unknown }).applicantId : undefined
  return typeof id === 'string' && id.length > 0 && id.length <= 64 ? id : null
}

/** Sumsub's request signature: hex HMAC-SHA256 of timestamp, method, path with query and body, under the app token's secret. */
export function sumsubRequestSignature(secretKey: string, timestampSeconds: number, method: string, pathWithQuery: string, body = ''): string {
  return createHmac('sha256', secretKey).update(`${timestampSeconds}${method.toUpperCase()}${pathWithQuery}${body}`).digest('hex')
}

const text = (value: string | null | undefined): string | undefined => {
  const trimmed = value?.trim()
  return trimmed ? trimmed : undefined
}

/** A country as Tessera writes it: alpha-2 when Sumsub's code is known, else as given (and refused later as invalid). */
const country = (value: string | null | undefined): string | undefined => {
  const given = text(value)
  return given === undefined ? undefined : (alpha2Of(given) ?? given)
}

/** Sumsub writes times as `2019-06-18 10:52:02` in UTC; an ISO 8601 time is taken as it is. */
export function sumsubTime(value: string | null | undefined): string | undefined {
  const given = text(value)
  if (given === undefined) return undefined
  const parsed = Date.parse(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(given) ? `${given.replace(' ', 'T')}Z` : given)
  return Number.isNaN(parsed) ? undefined : new Date(parsed).toISOString()
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T
}

const IDENTITY_DOCUMENTS: Record<string, NonNullable<IdentityData['document']>['type']> = {
  PASSPORT: 'passport',
  ID_CARD: 'id-card',
  DRIVERS: 'driving-license',
  RESIDENCE_PERMIT: 'residence-permit',
}

const CONTENT_TYPES: Record<string, string> = { jpeg: 'image/jpeg', jpg: 'image/jpeg', png: 'image/png', pdf: 'application/pdf' }

function addressOf(address: SumsubAddress | undefined): ProviderAddress | null {
  if (!address) return null
  const line1 = [text(address.buildingNumber), text(address.street)].filter(Boolean).join(' ')
  const result = definedOnly({
    country: country(address.country),
    city: text(address.town),
    line1: line1 || undefined,
    line2: [text(address.flatNumber), text(address.subStreet)].filter(Boolean).join(', ') || undefined,
    postalCode: text(address.postCode),
  })
  return Object.keys(result).length > 0 ? result : null
}

function fileOf(applicant: SumsubApplicant, resource: SumsubResource): ProviderFile[] {
  const type = resource.idDocDef?.idDocType ?? ''
  const side = resource.idDocDef?.idDocSubType
  const contentType = CONTENT_TYPES[(resource.fileMetadata?.fileType ?? '').toLowerCase()] ?? 'application/octet-stream'
  const base = { locator: `${applicant.inspectionId ?? applicant.id}/${resource.id}`, contentType, providerDetails: { fileId: resource.id } }
  if (resource.deactivated) return []
  if (type in IDENTITY_DOCUMENTS) {
    return [{ ...base, process: 'identity', category: 'document', context: side === 'BACK_SIDE' ? 'photo-document-back' : 'photo-document-front' }]
  }
  if (type === 'SELFIE') return [{ ...base, process: 'identity', category: 'image', context: 'photo-selfie' }]
  if (type === 'UTILITY_BILL') return [{ ...base, process: 'proof-of-address', category: 'document', context: 'address-proof' }]
  return []
}

/** What a reviewed applicant holds, in the shapes of an ingestion's result. */
export function sumsubRecord(applicant: SumsubApplicant, resources: readonly SumsubResource[]): ProviderRecord {
  const info = applicant.info ?? {}
  const verifiedAt = sumsubTime(applicant.review?.reviewDate)
  const givenName = text(info.firstName)
  const familyName = text(info.lastName)
  const birthdate = text(info.dob)
  const address = addressOf(info.addresses?.[0] ?? undefined)
  const gender = info.gender === 'M' ? 'male' : info.gender === 'F' ? 'female' : undefined
  const files = resources.flatMap((resource) => fileOf(applicant, resource))
  const document = info.idDocs?.find((doc) => (doc.idDocType ?? '') in IDENTITY_DOCUMENTS)
  const fullName = [givenName, familyName].filter(Boolean).join(' ')
  const birthplace = definedOnly({ town: text(info.placeOfBirth), country: country(info.countryOfBirth) })
  const profile = definedOnly({
    fullName: fullName || undefined,
    birthdate,
    birthplace: Object.keys(birthplace).length > 0 ? birthplace : undefined,
    primaryCitizenship: country(info.nationality),
  })
  const hasBill = info.idDocs?.some((doc) => doc.idDocType === 'UTILITY_BILL') || files.some((file) => file.process === 'proof-of-address')
  return {
    profile: Object.keys(profile).length > 0 ? profile : null,
    address,
    identity: document
      ? (definedOnly({
        document: definedOnly({ type: IDENTITY_DOCUMENTS[document.idDocType ?? '']!, number: text(document.number), country: country(document.country), expiresAt: text(document.validUntil) }),
        person: definedOnly({ givenName, familyName, birthdate, gender }),
        verifiedAt,
      }) as IdentityData)
      : null,
    proofOfAddress: address && hasBill ? { person: definedOnly({ givenName, familyName, address }), ...(verifiedAt ? { verifiedAt } : {}) } : null,
    files,
  }
}

/** Imports and reads applicants through Sumsub's API (real or simulated). */
export class SumsubReader implements SumsubSource {
  private readonly api: SumsubApi

  constructor(api: SumsubApi) {
    this.api = api
  }

  async importApplicant(shareToken: string): Promise<string> {
    return (await this.api.importApplicant(shareToken)).id
  }

  async read(applicantId: string): Promise<Readiness> {
    const applicant = await this.api.applicant(applicantId)
    const review = applicant.review
    if (review?.reviewStatus !== 'completed') return { state: 'pending' }
    const answer = review.reviewResult?.reviewAnswer
    if (answer !== 'GREEN') return { state: 'rejected', message: `The Sumsub applicant's review is ${answer ?? 'without an answer'}, not GREEN` }
    return { state: 'ready', record: sumsubRecord(applicant, (await this.api.resources(applicantId)).items) }
  }

  download(file: ProviderFile): Promise<DownloadedFile> {
    const [inspectionId, imageId] = file.locator.split('/')
    return this.api.image(inspectionId!, imageId!)
  }
}

/**
 * Sumsub's API over HTTP with the deployment's app token: each call carries `X-App-Token`, `X-App-Access-Ts` and
 * the signature of timestamp, method, path and body (`X-App-Access-Sig`). A 4xx is the provider refusing
 * (`ProviderClientError`); anything else that fails may pass later (`ProviderUnavailableError`).
 */
export class SumsubHttpApi implements SumsubApi {
  private readonly baseUrl: string
  private readonly appToken: string
  private readonly secretKey: string
  private readonly timeoutMs: number

  constructor(options: { baseUrl: string; appToken: string; secretKey: string; timeoutMs?: number }) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.appToken = options.appToken
    this.secretKey = options.secretKey
    this.timeoutMs = options.timeoutMs ?? 15_000
  }

  private call(method: 'GET' | 'POST', path: string): Promise<Response> {
    const ts = Math.floor(Date.now() / 1000)
    return callProvider('Sumsub', `${this.baseUrl}${path}`, {
      method,
      headers: {
        'x-app-token': this.appToken,
        'x-app-access-ts': String(ts),
        'x-app-access-sig': sumsubRequestSignature(this.secretKey, ts, method, path),
        accept: '*/*',
      },
      timeoutMs: this.timeoutMs,
    })
  }

  private async json<T>(method: 'GET' | 'POST', path: string): Promise<T> {
    return providerJson<T>('Sumsub', await this.call(method, path))
  }

  importApplicant(shareToken: string): Promise<SumsubApplicant> {
    return this.json('POST', `/resources/applicants/-/import?shareToken=${encodeURIComponent(shareToken)}`)
  }

  applicant(applicantId: string): Promise<SumsubApplicant> {
    return this.json('GET', `/resources/applicants/${encodeURIComponent(applicantId)}/one`)
  }

  async resources(applicantId: string): Promise<{ items: SumsubResource[] }> {
    const body = await this.json<{ items?: SumsubResource[] }>('GET', `/resources/applicants/${encodeURIComponent(applicantId)}/metadata/resources`)
    return { items: body.items ?? [] }
  }

  async image(inspectionId: string, imageId: string): Promise<DownloadedFile> {
    const response = await this.call('GET', `/resources/inspections/${encodeURIComponent(inspectionId)}/resources/${encodeURIComponent(imageId)}`)
    const contentType = (response.headers.get('content-type') ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase()
    return { content: Buffer.from(await response.arrayBuffer()), contentType }
  }
}
