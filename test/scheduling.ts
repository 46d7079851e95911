// What the tests of recurring jobs (test/scheduled-jobs*.test.ts) share.
import { randomBytes } from 'node:crypto'
import { SELF_CATEGORIZATION_FORM_ID } from '../src/modules/kyc/self-categorization.ts'

export const MINUTE = 60_000
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR

/** The recurring jobs this deployment has, with their periods when SCHEDULE_PERIODS leaves them alone. */
export const SCHEDULES: Record<string, number> = {
  'prices.record': MINUTE,
  'prices.backfill': DAY,
  'idempotency.purge': 10 * MINUTE,
  'jobs.retention': HOUR,
  'kyc.self-categorization-expiry': MINUTE,
  'files.orphan-bytes': 10 * MINUTE,
}

export const ANSWERS = {
  investor: { type: 'restricted_investor' },
  'investor-profile': {
    'invested-less-than-10-percent': 'yes',
    'invested-percentage': '5',
    'invest-less-than-10-percent': 'yes',
    'invest-percentage': '9.99',
    'investor-type-confirmation': true,
  },
}

/**
 * The requests that give a self-categorization statement, one category each (the form takes one at a time): the
 * last attests the outcome as a partner does, valid until `expiresAt` when given, else the service reviews it.
 */
export function statementRequests(expiresAt?: Date): Record<string, unknown>[] {
  return [
    { input: { formId: SELF_CATEGORIZATION_FORM_ID, answers: { investor: ANSWERS.investor } } },
    {
      input: { formId: SELF_CATEGORIZATION_FORM_ID, answers: { 'investor-profile': ANSWERS['investor-profile'] } },
      ...(expiresAt ? { output: { result: 'approved', attempts: { used: 1, maximum: 30 }, expiresAt: expiresAt.toISOString(), verifiedAt: '2024-01-01T00:00:00.000Z' } } : {}),
    },
  ]
}

/** A multipart/form-data upload cut in two: the form fields and the start of the file part, and its end. */
export function uploadParts(formData: Record<string, string>): { head: Buffer; tail: Buffer; contentType: string } {
  const boundary = `----scheduled${randomBytes(8).toString('hex')}`
  const fields = Object.entries(formData).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
  return {
    head: Buffer.concat([Buffer.from(fields.join('')), Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.png"\r\nContent-Type: image/png\r\n\r\n`), Buffer.from([0x89, 0x50, 0x4e, 0x47])]),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
    contentType: `multipart/form-data; boundary=${boundary}`,
  }
}

