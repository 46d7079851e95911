import { createHash } from 'node:crypto'
import { ProviderClientError, type DownloadedFile, type VeriffCredentials } from './connector.ts'
import type { SumsubApi, SumsubApplicant, SumsubResource } from './sumsub.ts'
import type { VeriffApi, VeriffDecisionResponse, VeriffMediaResponse } from './veriff.ts'

/**
 * The sandbox's Veriff and Sumsub: they answer in the providers' own wire shapes, deterministically from what they
 * are asked, keeping nothing between calls (any process answers the same), so that a test chooses an outcome by
 * the session id or share token it sends (docs/kyc-connector.md lists them). Everyone else is approved: a person
 * with a GB passport and a GB address, whose name and birth date follow from the id.
 */

/** Veriff sessions whose id ends with these twelve hex digits answer so; any other session is approved. */
export const SANDBOX_VERIFF_SESSIONS = {
  unknown: '000000000404',
  declined: '0000000000de',
  inReview: '0000000000ee',
  withoutAddress: '0000000000ad',
  filesMissing: '0000000000f0',
} as const

/** Sumsub share tokens ending with these suffixes answer so; any other token shares an approved applicant. */
export const SANDBOX_SUMSUB_TOKENS = {
  invalid: '-invalid',
  rejected: '-rejected',
  pending: '-pending',
  withoutAddress: '-no-address',
  filesMissing: '-no-files',
} as const

const GIVEN_NAMES = ['John', 'Jane', 'Alex', 'Maria', 'Samuel', 'Aisha', 'Tomasz', 'Ines']
const FAMILY_NAMES = ['Doe', 'Smith', 'Okafor', 'Novak', 'García', 'Brown', 'Ahmed', 'Kowalski']

function digest(seed: string): Buffer {
  return createHash('sha256').update(seed).digest()
}

/** The person an id stands for: the same id, the same person. */
function personOf(seed: string) {
  const bytes = digest(seed)
  const year = 1960 + (bytes[2]! % 40)
  const month = 1 + (bytes[3]! % 12)
  const day = 1 + (bytes[4]! % 28)
  return {
    givenName: GIVEN_NAMES[bytes[0]! % GIVEN_NAMES.length]!,
    familyName: FAMILY_NAMES[bytes[1]! % FAMILY_NAMES.length]!,
    birthdate: `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`,
    gender: bytes[5]! % 2 === 0 ? 'F' : 'M',
    documentNumber: bytes.subarray(6, 11).toString('hex').toUpperCase().slice(0, 9),
  }
}

const ADDRESS = { city: 'Manchester', street: 'High Street', houseNumber: '1', postcode: 'M4 1AA' }
/** A decision some days ago, fixed per person, so that two reads agree. */
const decidedAt = (seed: string) => new Date(Date.UTC(2026, 0, 1 + (digest(seed)[6]! % 28), 10, 15, 0)).toISOString()

const MAGIC: Record<string, Buffer> = {
  'image/jpeg': Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  'application/pdf': Buffer.from('%PDF-1.4\n'),
  'video/mp4': Buffer.from([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70]),
}

/** Content of the type, 4 KiB, the same for the same id: enough for the files module's minimum size. */
function contentOf(id: string, contentType: string): DownloadedFile {
  const padding = Buffer.concat(Array.from({ length: 128 }, (_, i) => digest(`${id}:${i}`)))
  return { content: Buffer.concat([MAGIC[contentType] ?? Buffer.alloc(0), padding]).subarray(0, 4096), contentType }
}

/** Veriff's API as the sandbox answers it. */
export class SandboxVeriffApi implements VeriffApi {
  async decision(_credentials: VeriffCredentials, sessionId: string): Promise<VeriffDecisionResponse> {
    const id = sessionId.toLowerCase()
    const selector = id.slice(-12)
    if (selector === SANDBOX_VERIFF_SESSIONS.unknown) throw new ProviderClientError('Veriff refused the request (404)', 404)
    if (selector === SANDBOX_VERIFF_SESSIONS.inReview) return { status: 'success', verification: { id, status: 'review', code: 9121, decisionTime: null } }
    const person = personOf(id)
    const declined = selector === SANDBOX_VERIFF_SESSIONS.declined
    return {
      status: 'success',
      verification: {
        id,
        status: declined ? 'declined' : 'approved',
        code: declined ? 9102 : 9001,
        reason: declined ? 'Physical document not used' : null,
        decisionTime: decidedAt(id),
        person: {
          firstName: person.givenName,
          lastName: person.familyName,
          dateOfBirth: person.birthdate,
          gender: person.gender,
          nationality: 'GB',
          placeOfBirth: 'London',
          addresses: selector === SANDBOX_VERIFF_SESSIONS.withoutAddress ? [] : [{ fullAddress: `${ADDRESS.houseNumber} ${ADDRESS.street}, ${ADDRESS.city} ${ADDRESS.postcode}`, parsedAddress: { ...ADDRESS, country: 'GB' } }],
        },
        document: { number: person.documentNumber, type: 'PASSPORT', country: 'GB', validFrom: null, validUntil: '2031-03-13' },
      },
    }
  }

  async media(_credentials: VeriffCredentials, sessionId: string): Promise<VeriffMediaResponse> {
    const id = sessionId.toLowerCase()
    const withAddress = !id.endsWith(SANDBOX_VERIFF_SESSIONS.withoutAddress)
    const image = (context: string, mimetype: string) => ({ id: `${id}~${context}`, name: context, context, mimetype, size: 4096 })
    return {
      status: 'success',
      images: [image('document-front', 'image/jpeg'), image('face', 'image/jpeg'), ...(withAddress ? [image('address-front', 'application/pdf')] : [])],
      videos: [image('selfid_video', 'video/mp4')],
    }
  }

  async mediaContent(_credentials: VeriffCredentials, mediaId: string): Promise<DownloadedFile> {
    const [sessionId = '', context = ''] = mediaId.split('~')
    if (sessionId.endsWith(SANDBOX_VERIFF_SESSIONS.filesMissing)) throw new ProviderClientError('Veriff refused the request (404)', 404)
    const type = context === 'address-front' ? 'application/pdf' : context === 'selfid_video' ? 'video/mp4' : 'image/jpeg'
    return contentOf(mediaId, type)
  }
}

// A sandbox applicant id: 20 hex digits of the token's hash, then the outcome the token chose (4 hex digits).
const OUTCOMES = ['approved', 'rejected', 'pending', 'withoutAddress', 'filesMissing'] as const

/** Sumsub's API as the sandbox answers it (with any app token). */
export class SandboxSumsubApi implements SumsubApi {
  async importApplicant(shareToken: string): Promise<SumsubApplicant> {
    if (shareToken.endsWith(SANDBOX_SUMSUB_TOKENS.invalid)) throw new ProviderClientError('Sumsub refused the request (401)', 401)
    const outcome = OUTCOMES.find((name) => name !== 'approved' && shareToken.endsWith(SANDBOX_SUMSUB_TOKENS[name])) ?? 'approved'
    const id = `${digest(shareToken).toString('hex').slice(0, 20)}${OUTCOMES.indexOf(outcome).toString(16).padStart(4, '0')}`
    return this.applicant(id)
  }

  private outcomeOf(applicantId: string): (typeof OUTCOMES)[number] {
    const outcome = /^[0-9a-f]{24}$/.test(applicantId) ? OUTCOMES[Number.parseInt(applicantId.slice(20), 16)] : undefined
    if (!outcome) throw new ProviderClientError('Sumsub refused the request (404)', 404)
    return outcome
  }

  async applicant(applicantId: string): Promise<SumsubApplicant> {
    const outcome = this.outcomeOf(applicantId)
    const person = personOf(applicantId)
    const review = outcome === 'pending'
      ? { reviewStatus: 'pending' }
      : { reviewStatus: 'completed', reviewDate: decidedAt(applicantId).replace('T', ' ').slice(0, 19), reviewResult: { reviewAnswer: outcome === 'rejected' ? 'RED' : 'GREEN' } }
    const withAddress = outcome !== 'withoutAddress'
    return {
      id: applicantId,
      inspectionId: `i${applicantId.slice(1)}`,
      info: {
        firstName: person.givenName,
        lastName: person.familyName,
        dob: person.birthdate,
        gender: person.gender,
        placeOfBirth: 'London',
        countryOfBirth: 'GBR',
        nationality: 'GBR',
        country: 'GBR',
        addresses: withAddress ? [{ country: 'GBR', town: ADDRESS.city, street: ADDRESS.street, buildingNumber: ADDRESS.houseNumber, postCode: ADDRESS.postcode }] : [],
        idDocs: [
          { idDocType: 'PASSPORT', country: 'GBR', number: person.documentNumber, validUntil: '2031-03-13' },
          ...(withAddress ? [{ idDocType: 'UTILITY_BILL', country: 'GBR' }] : []),
        ],
      },
      review,
    }
  }

  async resources(applicantId: string): Promise<{ items: SumsubResource[] }> {
    const outcome = this.outcomeOf(applicantId)
    const imageId = (n: number) => String(Number.parseInt(applicantId.slice(0, 7), 16) * 10 + n)
    const items: SumsubResource[] = [
      { id: imageId(1), idDocDef: { idDocType: 'PASSPORT', country: 'GBR' }, fileMetadata: { fileType: 'jpeg', fileSize: 4096 } },
      { id: imageId(2), idDocDef: { idDocType: 'SELFIE', country: 'GBR' }, fileMetadata: { fileType: 'jpeg', fileSize: 4096 } },
    ]
    if (outcome !== 'withoutAddress') items.push({ id: imageId(3), idDocDef: { idDocType: 'UTILITY_BILL', country: 'GBR' }, fileMetadata: { fileType: 'pdf', fileSize: 4096 } })
    return { items }
  }

  async image(inspectionId: string, imageId: string): Promise<DownloadedFile> {
    // The inspection id carries the applicant's outcome digits, where the applicant id has them.
    const outcome = OUTCOMES[Number.parseInt(inspectionId.slice(20), 16)]
    if (outcome === undefined || outcome === 'filesMissing') throw new ProviderClientError('Sumsub refused the request (404)', 404)
    return contentOf(`${inspectionId}/${imageId}`, imageId.endsWith('3') ? 'application/pdf' : 'image/jpeg')
  }
}
