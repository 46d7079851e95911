import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { ProviderClientError, ProviderUnavailableError } from './connector.ts'
import { alpha2Of } from './countries.ts'
import { SANDBOX_SUMSUB_TOKENS, SANDBOX_VERIFF_SESSIONS, SandboxSumsubApi, SandboxVeriffApi } from './sandbox.ts'
import { sumsubCallbackApplicant, sumsubDigest, sumsubRecord, sumsubRequestSignature, sumsubTime, SumsubHttpApi, SumsubReader, verifySumsubDigest } from './sumsub.ts'
import { veriffCallbackSession, veriffSignature, veriffRecord, VeriffHttpApi, VeriffReader, verifyVeriffSignature } from './veriff.ts'

const credentials = { apiKey: 'api-key-1234', sharedSecretKey: 'shared-secret-5678' }
const SESSION = '550e8400-e29b-41d4-a716-446655440000'

describe('callback signatures', () => {
  test("Veriff: the hex HMAC-SHA256 of the raw body under the shared secret, and nothing else", () => {
    const body = Buffer.from('{"verification":{"id":"x","status":"approved"}}')
    const signature = createHmac('sha256', credentials.sharedSecretKey).update(body).digest('hex')
    assert.equal(veriffSignature(credentials.sharedSecretKey, body), signature)
    assert.equal(verifyVeriffSignature(credentials.sharedSecretKey, body, signature), true)
    assert.equal(verifyVeriffSignature(credentials.sharedSecretKey, body, signature.toUpperCase()), true)
    for (const forged of [undefined, '', 'zz', signature.slice(0, 62), `${signature}00`, veriffSignature('other', body)]) {
      assert.equal(verifyVeriffSignature(credentials.sharedSecretKey, body, forged), false, String(forged))
    }
    assert.equal(verifyVeriffSignature(credentials.sharedSecretKey, Buffer.from(`${body.toString()} `), signature), false)
  })

  test('Sumsub: the HMAC the algorithm header names (SHA-1 when absent), of the raw body under the webhook secret', () => {
    const body = '{"applicantId":"5d08a63239b79354a2ebaa1d","type":"applicantReviewed"}'
    assert.equal(sumsubDigest('s', body, 'HMAC_SHA512_HEX'), createHmac('sha512', 's').update(body).digest('hex'))
    assert.equal(verifySumsubDigest('s', body, sumsubDigest('s', body, 'HMAC_SHA1_HEX'), undefined), true)
    assert.equal(verifySumsubDigest('s', body, sumsubDigest('s', body), 'hmac_sha256_hex'), true)
    assert.equal(verifySumsubDigest('s', body, sumsubDigest('s', body), 'HMAC_SHA1_HEX'), false)
    assert.equal(verifySumsubDigest('s', body, sumsubDigest('s', body), 'HMAC_MD5_HEX'), false)
    assert.equal(verifySumsubDigest('s', body, undefined, 'HMAC_SHA256_HEX'), false)
    assert.equal(verifySumsubDigest('t', body, sumsubDigest('s', body), 'HMAC_SHA256_HEX'), false)
  })

  test('what a callback is about', () => {
    assert.equal(veriffCallbackSession({ status: 'success', verification: { id: SESSION.toUpperCase() } }), SESSION)
    assert.equal(veriffCallbackSession({ id: SESSION, feature: 'selfid', code: 7002, action: 'submitted' }), SESSION)
    assert.equal(veriffCallbackSession(null), null)
    assert.equal(veriffCallbackSession({ id: 42 }), null)
    assert.equal(sumsubCallbackApplicant({ applicantId: 'abc' }), 'abc')
    assert.equal(sumsubCallbackApplicant({ applicantId: '' }), null)
  })

  test("Sumsub's request signature covers timestamp, method, path and body", () => {
    const expected = createHmac('sha256', 'k').update('1700000000POST/resources/applicants/-/import?shareToken=t').digest('hex')
    assert.equal(sumsubRequestSignature('k', 1_700_000_000, 'post', '/resources/applicants/-/import?shareToken=t'), expected)
  })
})

describe('mapping the providers\' shapes', () => {
  test('countries: alpha-3 becomes alpha-2; alpha-2 is kept; anything else is unknown', () => {
    assert.equal(alpha2Of('GBR'), 'GB')
    assert.equal(alpha2Of('deu'), 'DE')
    assert.equal(alpha2Of('FR'), 'FR')
    assert.equal(alpha2Of('XYZ'), undefined)
  })

  test('Sumsub times are UTC without a zone; ISO times stay', () => {
    assert.equal(sumsubTime('2019-06-18 10:52:02'), '2019-06-18T10:52:02.000Z')
    assert.equal(sumsubTime('2019-06-18T10:52:02.5Z'), '2019-06-18T10:52:02.500Z')
    assert.equal(sumsubTime('yesterday'), undefined)
  })

  test('a Veriff decision: names, document, address, files by context; unknown media are left out', () => {
    const record = veriffRecord(
      {
        id: SESSION,
        status: 'approved',
        decisionTime: '2026-01-02T03:04:05.000Z',
        person: { firstName: 'John', lastName: 'Doe', dateOfBirth: '1987-01-01', gender: 'M', nationality: 'gb', placeOfBirth: 'London', addresses: [{ parsedAddress: { houseNumber: '123', street: 'Main St', city: 'London', postcode: 'SW1A 1AA', country: 'GB', unit: 'Flat 2' } }] },
        document: { number: '7700225VH', type: 'DRIVERS_LICENSE', country: 'GB', validUntil: '2030-03-13' },
      },
      { status: 'success', images: [{ id: 'm1', context: 'document-front', mimetype: 'image/JPEG' }, { id: 'm2', context: 'unknown-thing', mimetype: 'image/png' }], videos: [] },
    )
    assert.deepEqual(record.profile, { fullName: 'John Doe', birthdate: '1987-01-01', birthplace: { town: 'London' }, primaryCitizenship: 'GB' })
    assert.deepEqual(record.address, { country: 'GB', city: 'London', line1: '123 Main St', line2: 'Flat 2', postalCode: 'SW1A 1AA' })
    assert.deepEqual(record.identity, {
      document: { type: 'driving-license', number: '7700225VH', country: 'GB', expiresAt: '2030-03-13' },
      person: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', gender: 'male' },
      verifiedAt: '2026-01-02T03:04:05.000Z',
    })
    assert.deepEqual(record.files, [{ process: 'identity', context: 'photo-document-front', category: 'document', locator: 'm1', contentType: 'image/jpeg', providerDetails: { mediaId: 'm1' } }])
    assert.equal(record.proofOfAddress, null, 'no proof-of-address document in the session')
  })

  test('a Sumsub applicant: alpha-3 countries, the identity document among the documents, the bill as proof of address', () => {
    const record = sumsubRecord(
      {
        id: 'a1',
        inspectionId: 'i1',
        info: {
          firstName: 'Jane',
          lastName: 'Roe',
          dob: '1990-02-03',
          gender: 'F',
          countryOfBirth: 'FRA',
          placeOfBirth: 'Lyon',
          nationality: 'FRA',
          addresses: [{ country: 'GBR', town: 'Leeds', street: 'Park Row', buildingNumber: '7', postCode: 'LS1 5HD', flatNumber: '3' }],
          idDocs: [{ idDocType: 'UTILITY_BILL', country: 'GBR' }, { idDocType: 'ID_CARD', country: 'FRA', number: 'X1', validUntil: '2031-01-01' }],
        },
        review: { reviewStatus: 'completed', reviewDate: '2026-01-05 09:00:00', reviewResult: { reviewAnswer: 'GREEN' } },
      },
      [
        { id: '11', idDocDef: { idDocType: 'ID_CARD', idDocSubType: 'BACK_SIDE' }, fileMetadata: { fileType: 'png' } },
        { id: '12', idDocDef: { idDocType: 'UTILITY_BILL' }, fileMetadata: { fileType: 'pdf' } },
        { id: '13', idDocDef: { idDocType: 'SELFIE' }, fileMetadata: { fileType: 'jpg' }, deactivated: true },
      ],
    )
    assert.deepEqual(record.profile, { fullName: 'Jane Roe', birthdate: '1990-02-03', birthplace: { town: 'Lyon', country: 'FR' }, primaryCitizenship: 'FR' })
    assert.deepEqual(record.address, { country: 'GB', city: 'Leeds', line1: '7 Park Row', line2: '3', postalCode: 'LS1 5HD' })
    assert.deepEqual(record.identity?.document, { type: 'id-card', number: 'X1', country: 'FR', expiresAt: '2031-01-01' })
    assert.equal(record.identity?.verifiedAt, '2026-01-05T09:00:00.000Z')
    assert.deepEqual(record.proofOfAddress, { person: { givenName: 'Jane', familyName: 'Roe', address: record.address }, verifiedAt: '2026-01-05T09:00:00.000Z' })
    assert.deepEqual(record.files.map((file) => [file.process, file.context, file.contentType, file.locator]), [
      ['identity', 'photo-document-back', 'image/png', 'i1/11'],
      ['proof-of-address', 'address-proof', 'application/pdf', 'i1/12'],
    ])
  })
})

describe('sandbox providers', () => {
  const veriff = new VeriffReader(new SandboxVeriffApi())
  const sumsub = new SumsubReader(new SandboxSumsubApi())
  const session = (selector: string) => `${SESSION.slice(0, 24)}${selector}`

  test('Veriff: the same session reads the same; each selector its outcome', async () => {
    const first = await veriff.read(credentials, SESSION)
    assert.equal(first.state, 'ready')
    assert.deepEqual(await veriff.read(credentials, SESSION), first)
    assert.equal((await veriff.read(credentials, session(SANDBOX_VERIFF_SESSIONS.declined))).state, 'rejected')
    assert.equal((await veriff.read(credentials, session(SANDBOX_VERIFF_SESSIONS.inReview))).state, 'pending')
    await assert.rejects(veriff.read(credentials, session(SANDBOX_VERIFF_SESSIONS.unknown)), ProviderClientError)
    const bare = await veriff.read(credentials, session(SANDBOX_VERIFF_SESSIONS.withoutAddress))
    assert.ok(bare.state === 'ready' && bare.record.address === null && bare.record.proofOfAddress === null)
    const missing = await veriff.read(credentials, session(SANDBOX_VERIFF_SESSIONS.filesMissing))
    assert.ok(missing.state === 'ready')
    await assert.rejects(veriff.download(credentials, missing.record.files[0]!), ProviderClientError)
    assert.ok(first.state === 'ready')
    const file = await veriff.download(credentials, first.record.files[0]!)
    assert.equal(file.content.length, 4096)
  })

  test('Sumsub: a token imports the same applicant each time; each suffix its outcome', async () => {
    const id = await sumsub.importApplicant('_act-sbx-jwt-abc')
    assert.equal(await sumsub.importApplicant('_act-sbx-jwt-abc'), id)
    const read = await sumsub.read(id)
    assert.ok(read.state === 'ready' && read.record.identity?.document?.country === 'GB')
    assert.equal((await sumsub.download(read.record.files.find((f) => f.process === 'proof-of-address')!)).contentType, 'application/pdf')
    assert.equal((await sumsub.read(await sumsub.importApplicant(`t${SANDBOX_SUMSUB_TOKENS.rejected}`))).state, 'rejected')
    assert.equal((await sumsub.read(await sumsub.importApplicant(`t${SANDBOX_SUMSUB_TOKENS.pending}`))).state, 'pending')
    await assert.rejects(sumsub.importApplicant(`t${SANDBOX_SUMSUB_TOKENS.invalid}`), ProviderClientError)
    await assert.rejects(sumsub.read('not-an-applicant'), ProviderClientError)
  })
})

/**
 * The production adapters, against a server on the loopback that answers as the providers do from the sandbox's
 * answers and checks each request's credentials and signature as the providers would.
 */
describe('HTTP adapters', () => {
  const veriffSandbox = new SandboxVeriffApi()
  const sumsubSandbox = new SandboxSumsubApi()
  const seen: string[] = []
  let failNext: number | null = null
  let server: http.Server
  let base = ''

  before(async () => {
    server = http.createServer((request, response) => {
      void (async () => {
        const url = request.url ?? ''
        seen.push(`${request.method} ${url}`)
        const send = (status: number, body: unknown, type = 'application/json') => {
          response.writeHead(status, { 'content-type': type })
          response.end(Buffer.isBuffer(body) ? body : JSON.stringify(body))
        }
        if (failNext !== null) {
          const status = failNext
          failNext = null
          return send(status, { error: 'nope' })
        }
        try {
          if (url.startsWith('/v1/')) {
            const id = decodeURIComponent(url.split('/')[3]!)
            if (request.headers['x-auth-client'] !== credentials.apiKey || request.headers['x-hmac-signature'] !== veriffSignature(credentials.sharedSecretKey, id)) return send(401, { status: 'fail' })
            if (url.endsWith('/decision')) return send(200, await veriffSandbox.decision(credentials, id))
            if (url.endsWith('/media')) return send(200, await veriffSandbox.media(credentials, id))
            const file = await veriffSandbox.mediaContent(credentials, id)
            return send(200, file.content, file.contentType)
          }
          const ts = Number(request.headers['x-app-access-ts'])
          if (request.headers['x-app-token'] !== 'app-token' || request.headers['x-app-access-sig'] !== sumsubRequestSignature('app-secret', ts, request.method!, url)) return send(401, { code: 401 })
          const parts = url.split('?')[0]!.split('/')
          if (url.startsWith('/resources/applicants/-/import')) return send(200, await sumsubSandbox.importApplicant(new URL(url, 'http://x').searchParams.get('shareToken')!))
          if (url.endsWith('/one')) return send(200, await sumsubSandbox.applicant(parts[3]!))
          if (url.endsWith('/metadata/resources')) return send(200, await sumsubSandbox.resources(parts[3]!))
          const image = await sumsubSandbox.image(parts[3]!, parts[5]!)
          return send(200, image.content, image.contentType)
        } catch (error) {
          return send(error instanceof ProviderClientError ? error.status : 500, { error: String(error) })
        }
      })()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  test('Veriff over HTTP reads what the sandbox holds, signing every call; refusals and outages are told apart', async () => {
    const reader = new VeriffReader(new VeriffHttpApi({ baseUrl: `${base}/` }))
    const direct = await new VeriffReader(veriffSandbox).read(credentials, SESSION)
    const read = await reader.read(credentials, SESSION)
    assert.deepEqual(read, direct)
    assert.ok(read.state === 'ready')
    const file = await reader.download(credentials, read.record.files[0]!)
    assert.equal(file.contentType, 'image/jpeg')
    assert.deepEqual(file, await veriffSandbox.mediaContent(credentials, read.record.files[0]!.locator))
    await assert.rejects(reader.read({ ...credentials, sharedSecretKey: 'wrong' }, SESSION), (error: unknown) => error instanceof ProviderClientError && error.status === 401)
    failNext = 503
    await assert.rejects(reader.read(credentials, SESSION), ProviderUnavailableError)
    await assert.rejects(new VeriffReader(new VeriffHttpApi({ baseUrl: 'http://127.0.0.1:1' })).read(credentials, SESSION), ProviderUnavailableError)
    assert.ok(seen.includes(`GET /v1/sessions/${SESSION}/decision`))
  })

  test('Sumsub over HTTP imports, reads and downloads with the app token\'s signature', async () => {
    const reader = new SumsubReader(new SumsubHttpApi({ baseUrl: base, appToken: 'app-token', secretKey: 'app-secret' }))
    const id = await reader.importApplicant('_act-sbx-jwt-xyz')
    assert.equal(id, await sumsubSandbox.importApplicant('_act-sbx-jwt-xyz').then((a) => a.id))
    const read = await reader.read(id)
    assert.deepEqual(read, await new SumsubReader(sumsubSandbox).read(id))
    assert.ok(read.state === 'ready')
    assert.equal((await reader.download(read.record.files[0]!)).content.length, 4096)
    await assert.rejects(new SumsubReader(new SumsubHttpApi({ baseUrl: base, appToken: 'app-token', secretKey: 'wrong' })).read(id), ProviderClientError)
    await assert.rejects(reader.importApplicant(`t${SANDBOX_SUMSUB_TOKENS.invalid}`), ProviderClientError)
    failNext = 500
    await assert.rejects(reader.read(id), ProviderUnavailableError)
  })
})
