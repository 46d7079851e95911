import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { derivePurposeKey } from '../../lib/sealing.ts'
import { signDownload, signUploadPolicy, verifyDownload, verifyUploadPolicy } from './signed-links.ts'

const sealingKey = randomBytes(32).toString('base64')
const key = derivePurposeKey(sealingKey, 'files/upload-policy')
const now = new Date('2026-11-22T10:00:00.000Z')
const policy = {
  fileId: '0190a8c1-0000-7000-8000-000000000001',
  organizationId: '0190a8c1-0000-7000-8000-000000000002',
  contentType: 'image/png',
  minSize: 1024,
  maxSize: 10_485_760,
  expiresAt: new Date('2026-11-22T10:15:00.000Z'),
}

test('purpose keys are 32 bytes, differ per purpose, and never equal the sealing key', () => {
  const download = derivePurposeKey(sealingKey, 'files/download-link')
  assert.equal(key.length, 32)
  assert.notDeepEqual(key, download)
  assert.notDeepEqual(key, Buffer.from(sealingKey, 'base64'))
  assert.deepEqual(derivePurposeKey(sealingKey, 'files/upload-policy'), key, 'derivation is deterministic')
})

test('an upload policy verifies until it expires, and binds every field', () => {
  const signed = signUploadPolicy(key, policy)
  assert.deepEqual(verifyUploadPolicy(key, signed.policy, signed.signature, now), { ok: policy })
  assert.deepEqual(verifyUploadPolicy(key, signed.policy, signed.signature, policy.expiresAt), { problem: 'expired', expiresAt: policy.expiresAt })
  assert.deepEqual(verifyUploadPolicy(derivePurposeKey(sealingKey, 'other'), signed.policy, signed.signature, now), { problem: 'signature' })
  for (const change of [{ fileId: '0190a8c1-0000-7000-8000-000000000003' }, { organizationId: '0190a8c1-0000-7000-8000-000000000003' }, { contentType: 'text/html' }, { maxSize: 10 ** 10 }, { expiresAt: new Date('2027-01-01T00:00:00.000Z') }]) {
    const other = signUploadPolicy(key, { ...policy, ...change })
    assert.deepEqual(verifyUploadPolicy(key, other.policy, signed.signature, now), { problem: 'signature' }, JSON.stringify(change))
  }
})

test('malformed policies and signatures are refused without throwing', () => {
  const signed = signUploadPolicy(key, policy)
  for (const [text, signature] of [['', signed.signature], ['!!!', signed.signature], [signed.policy, ''], [signed.policy, 'zz'], [Buffer.from('[1]').toString('base64url'), signed.signature]]) {
    assert.ok('problem' in verifyUploadPolicy(key, text!, signature!, now))
  }
  const forged = Buffer.from(JSON.stringify({ file: 'x' })).toString('base64url')
  const signedForged = signUploadPolicy(key, policy)
  assert.deepEqual(verifyUploadPolicy(key, forged, signedForged.signature, now), { problem: 'signature' })
})

test('a download token verifies until it expires; altered or foreign tokens do not', () => {
  const downloadKey = derivePurposeKey(sealingKey, 'files/download-link')
  const grant = { fileId: policy.fileId, organizationId: policy.organizationId, expiresAt: policy.expiresAt }
  const token = signDownload(downloadKey, grant)
  assert.deepEqual(verifyDownload(downloadKey, token, now), { ok: grant })
  assert.equal((verifyDownload(downloadKey, token, new Date('2026-11-22T10:15:00.001Z')) as { problem: string }).problem, 'expired')
  assert.equal((verifyDownload(key, token, now) as { problem: string }).problem, 'signature')
  for (const bad of ['', 'a.b.c', `${token}x`, token.replace('.', '.0'), `x${token}`]) assert.ok('problem' in verifyDownload(downloadKey, bad, now), bad)
})
