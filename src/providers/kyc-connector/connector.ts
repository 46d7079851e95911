/**
 * Where Tessera reads a verification a user already passed at an identity-verification provider (a Veriff session,
 * a Sumsub applicant shared by token), in the shapes of a KYC ingestion's result. Each provider has a wire API
 * (`VeriffApi`, `SumsubApi`) with two implementations: the HTTP client of the real service and the sandbox
 * simulator, which answers in the same wire shapes; the mapping from those shapes to these is shared by both.
 * Calls go over the network: callers make them outside any database transaction.
 */

export const INGESTION_PROCESSES = ['profile', 'address', 'identity', 'proof-of-address'] as const
export type IngestionProcess = (typeof INGESTION_PROCESSES)[number]

export interface ProviderAddress {
  country?: string
  subdivision?: string
  city?: string
  line1?: string
  line2?: string
  postalCode?: string
}

export interface ProfileData {
  fullName?: string
  birthdate?: string
  birthplace?: { town?: string; country?: string }
  primaryCitizenship?: string
}

export interface IdentityData {
  document?: { type: 'driving-license' | 'id-card' | 'passport' | 'residence-permit' | 'unsupported'; number?: string; country?: string; expiresAt?: string }
  person?: { givenName?: string; familyName?: string; birthdate?: string; gender?: 'female' | 'male'; address?: ProviderAddress }
  verifiedAt?: string
}

export interface ProofOfAddressData {
  person?: { givenName?: string; familyName?: string; address?: ProviderAddress }
  verifiedAt?: string
}

/** A file of the verification, to download for the process it evidences. */
export interface ProviderFile {
  process: 'identity' | 'proof-of-address'
  /** How the provider finds it again (a media id; an inspection and image id). */
  locator: string
  category: 'document' | 'image' | 'video'
  /** Its role in the KYC process (`photo-document-front`, `address-proof`, …). */
  context: string
  contentType: string
  /** Shown in the ingestion's result, e.g. `{mediaId}` or `{fileId}`. */
  providerDetails: Record<string, string>
}

/** What the provider verified, per process; null where it holds nothing for it. */
export interface ProviderRecord {
  profile: ProfileData | null
  address: ProviderAddress | null
  identity: IdentityData | null
  proofOfAddress: ProofOfAddressData | null
  files: ProviderFile[]
}

export type Readiness =
  | { state: 'ready'; record: ProviderRecord }
  /** No decision yet (in review, not submitted): ask again later. */
  | { state: 'pending' }
  /** Decided, and not approved: nothing of it may be imported. */
  | { state: 'rejected'; message: string }

export interface DownloadedFile {
  content: Buffer
  contentType: string
}

/**
 * The provider refused the call (unknown session or token, wrong credentials): asking again will not help. The
 * message is safe to show the client: it never holds a credential.
 */
export class ProviderClientError extends Error {
  readonly status: number
  constructor(message: string, status: number) {
    super(message)
    this.name = 'ProviderClientError'
    this.status = status
  }
}

/** The provider could not answer now (unreachable, 5xx, timeout): the same call may succeed later. */
export class ProviderUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ProviderUnavailableError'
  }
}

/**
 * One call to a provider's API: a 4xx is the provider refusing this request (ProviderClientError), anything else that
 * is not a success — unreachable, 5xx, timeout — may succeed later (ProviderUnavailableError). The body of a refusal
 * is dropped unread: it may echo what was sent.
 */
export async function callProvider(provider: string, url: string, init: { method?: 'GET' | 'POST'; headers: Record<string, string>; timeoutMs: number }): Promise<Response> {
  let response: Response
  try {
    response = await fetch(url, { method: init.method ?? 'GET', headers: init.headers, signal: AbortSignal.timeout(init.timeoutMs) })
  } catch (error) {
    throw new ProviderUnavailableError(`${provider} could not be reached`, { cause: error })
  }
  if (response.status >= 400 && response.status < 500) {
    await response.body?.cancel()
    throw new ProviderClientError(`${provider} refused the request (${response.status})`, response.status)
  }
  if (!response.ok) {
    await response.body?.cancel()
    throw new ProviderUnavailableError(`${provider} answered ${response.status}`)
  }
  return response
}

/** A provider's JSON answer; one that does not parse is the provider's failure, worth a retry. */
export async function providerJson<T>(provider: string, response: Response): Promise<T> {
  try {
    return (await response.json()) as T
  } catch (error) {
    throw new ProviderUnavailableError(`${provider} answered something that is not JSON`, { cause: error })
  }
}

export interface VeriffCredentials {
  apiKey: string
  sharedSecretKey: string
}

/** Reads Veriff sessions with an integration's credentials. */
export interface VeriffSource {
  read(credentials: VeriffCredentials, sessionId: string): Promise<Readiness>
  download(credentials: VeriffCredentials, file: ProviderFile): Promise<DownloadedFile>
}

/** Exchanges Sumsub share tokens for applicants of the deployment's own Sumsub account, and reads them. */
export interface SumsubSource {
  /** Imports the applicant a share token shares; answers its id. A token works once. */
  importApplicant(shareToken: string): Promise<string>
  read(applicantId: string): Promise<Readiness>
  download(file: ProviderFile): Promise<DownloadedFile>
}

/** The process results a record holds, for one process. */
export function dataFor(record: ProviderRecord, process: IngestionProcess): object | null {
  switch (process) {
    case 'profile':
      return record.profile
    case 'address':
      return record.address
    case 'identity':
      return record.identity
    case 'proof-of-address':
      return record.proofOfAddress
  }
}
