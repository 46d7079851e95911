import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { countByRingKey, keyIdOf, Sealer, SealingError, SealingKey, type SealingKeySet } from './sealing.ts'

const KEY = randomBytes(32)
const CONTEXT = ['kyc-connector', '0190a8c1-0000-7000-8000-000000000001', 'veriff', 'integration-a', 'apiKey']
const SECRET = 'a1b2c3d4-e5f6-7890-abcd-ef1234567890'

test('a sealed value opens with the same key and context, and does not contain the plaintext', () => {
  const sealer = new Sealer(KEY)
  const sealed = sealer.seal(SECRET, CONTEXT)
  assert.match(sealed, /^v1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
  assert.ok(!sealed.includes(SECRET))
  assert.equal(sealer.open(sealed, CONTEXT), SECRET)
  assert.equal(new Sealer(KEY.toString('base64')).open(sealed, CONTEXT), SECRET, 'the base64 text of the key is the same key')
})

test('any text round-trips, the empty string and non-ASCII included', () => {
  const sealer = new Sealer(KEY)
  for (const value of ['', 'x', 'ключ-🔑-鍵', 'a'.repeat(10_000)]) assert.equal(sealer.open(sealer.seal(value, CONTEXT), CONTEXT), value)
})

test('sealing the same value twice gives different texts (a fresh IV each time)', () => {
  const sealer = new Sealer(KEY)
  const first = sealer.seal(SECRET, CONTEXT)
  const second = sealer.seal(SECRET, CONTEXT)
  assert.notEqual(first, second)
  assert.notEqual(first.split('.')[2], second.split('.')[2])
})

test('a value altered anywhere does not open', () => {
  const sealer = new Sealer(KEY)
  const sealed = sealer.seal(SECRET, CONTEXT)
  const parts = sealed.split('.')
  const flip = (text: string, at: number) => {
    const bytes = Buffer.from(text, 'base64url')
    bytes[at] = bytes[at]! ^ 0x01
    return bytes.toString('base64url')
  }
  const altered = [
    [parts[0], parts[1], flip(parts[2]!, 0), parts[3]].join('.'),
    [parts[0], parts[1], parts[2], flip(parts[3]!, 0)].join('.'),
    [parts[0], parts[1], parts[2], flip(parts[3]!, Buffer.from(parts[3]!, 'base64url').length - 1)].join('.'),
    [parts[0], parts[1], parts[2], parts[3]!.slice(0, -4)].join('.'),
    [parts[0], parts[1], parts[2], ''].join('.'),
    ['v2', parts[1], parts[2], parts[3]].join('.'),
    parts.slice(0, 3).join('.'),
    'not sealed at all',
  ]
  for (const value of altered) assert.throws(() => sealer.open(value, CONTEXT), SealingError, value)
})

test('a value does not open in another context: it cannot be moved to another row or field', () => {
  const sealer = new Sealer(KEY)
  const sealed = sealer.seal(SECRET, CONTEXT)
  const elsewhere = [
    ['kyc-connector', '0190a8c1-0000-7000-8000-000000000002', 'veriff', 'integration-a', 'apiKey'],
    ['kyc-connector', '0190a8c1-0000-7000-8000-000000000001', 'sumsub', 'integration-a', 'apiKey'],
    ['kyc-connector', '0190a8c1-0000-7000-8000-000000000001', 'veriff', 'integration-b', 'apiKey'],
    ['kyc-connector', '0190a8c1-0000-7000-8000-000000000001', 'veriff', 'integration-a', 'sharedSecretKey'],
    // The same characters split differently are another context.
    ['kyc-connector', '0190a8c1-0000-7000-8000-000000000001', 'veriff', 'integration-a.apiKey'],
    [],
  ]
  for (const context of elsewhere) assert.throws(() => sealer.open(sealed, context), SealingError, JSON.stringify(context))
})

test('a value sealed under another key does not open, and the error says so', () => {
  const sealed = new Sealer(KEY).seal(SECRET, CONTEXT)
  const other = new Sealer(randomBytes(32))
  assert.throws(() => other.open(sealed, CONTEXT), (error: unknown) => error instanceof SealingError && /another key/.test(error.message))
  // Even when the key id is forged to match, the tag check refuses it.
  const forged = ['v1', other.keyId, ...sealed.split('.').slice(2)].join('.')
  assert.throws(() => other.open(forged, CONTEXT), SealingError)
})

test('errors never carry the plaintext or the key', () => {
  const sealer = new Sealer(KEY)
  const sealed = sealer.seal(SECRET, CONTEXT)
  try {
    sealer.open(sealed, [...CONTEXT, 'x'])
    assert.fail('should not open')
  } catch (error) {
    const text = `${(error as Error).message} ${(error as Error).stack}`
    assert.ok(!text.includes(SECRET))
    assert.ok(!text.includes(KEY.toString('base64')))
  }
})

test('a key that is not 32 bytes is refused', () => {
  assert.throws(() => new Sealer(randomBytes(16)), SealingError)
  assert.throws(() => new Sealer(Buffer.alloc(0).toString('base64')), SealingError)
})

/** A ring of keys as a sealer sees it: `current` seals, every key opens. */
function ringOf(keys: SealingKey[], current: SealingKey): SealingKeySet {
  return { current, find: (id) => keys.find((key) => key.id === id) }
}

test('over a ring, the current key seals and every key of the ring opens', () => {
  const [first, second] = [new SealingKey(randomBytes(32)), new SealingKey(randomBytes(32))]
  let set = ringOf([first], first)
  const sealer = new Sealer({ keys: () => set })
  const old = sealer.seal(SECRET, CONTEXT)
  assert.equal(keyIdOf(old), first.id)

  set = ringOf([first, second], second)
  const fresh = sealer.seal(SECRET, CONTEXT)
  assert.equal(keyIdOf(fresh), second.id)
  assert.equal(sealer.open(old, CONTEXT), SECRET, 'a value sealed under an older key of the ring still opens')
  assert.equal(sealer.open(fresh, CONTEXT), SECRET)
  assert.equal(sealer.isCurrent(old), false)
  assert.equal(sealer.isCurrent(fresh), true)

  const resealed = sealer.reseal(old, CONTEXT)
  assert.equal(keyIdOf(resealed), second.id)
  assert.equal(sealer.open(resealed, CONTEXT), SECRET)
  assert.equal(sealer.reseal(fresh, CONTEXT), fresh, 'a value under the current key is left as it is')
  assert.throws(() => sealer.reseal(old, [...CONTEXT, 'elsewhere']), SealingError, 'a re-seal opens the value in its own context')
})

test('a value under a key the ring lacks does not open, and the ring is told so that it can read its keys again', () => {
  const known = new SealingKey(randomBytes(32))
  const stranger = new Sealer(randomBytes(32)).seal(SECRET, CONTEXT)
  const told: string[] = []
  const sealer = new Sealer({ keys: () => ringOf([known], known), onUnknownKey: (id) => told.push(id) })
  assert.throws(() => sealer.open(stranger, CONTEXT), (error: unknown) => error instanceof SealingError && /another key/.test(error.message))
  assert.deepEqual(told, [keyIdOf(stranger)])
})

test('keys derived for a purpose seal under ids of their own, which lead back to their ring key', () => {
  const ringKey = new SealingKey(randomBytes(32))
  const derived = ringKey.derive('external-accounts/card-number')
  assert.notEqual(derived.id, ringKey.id)
  assert.equal(derived.ringId, ringKey.id)
  assert.deepEqual(ringKey.derive('external-accounts/card-number').material, derived.material, 'derivation is deterministic')
  const sealer = new Sealer({ keys: () => ringOf([derived], derived) })
  const sealed = sealer.seal(SECRET, CONTEXT)
  assert.equal(sealer.ringKeyOf(keyIdOf(sealed)!), ringKey.id)
  // Renamed to the ring key's id, it does not open under that key either.
  assert.throws(() => new Sealer(ringKey.material).open(sealed.replace(`.${derived.id}.`, `.${ringKey.id}.`), CONTEXT), SealingError)
})

test('a census counts values by ring key, and names the keys the ring lacks', () => {
  const ringKey = new SealingKey(randomBytes(32))
  const derived = ringKey.derive('purpose')
  const sealer = new Sealer({ keys: () => ringOf([ringKey, derived], derived) })
  assert.deepEqual(countByRingKey(sealer, [{ key_id: ringKey.id, n: 2 }, { key_id: derived.id, n: '3' }, { key_id: 'zzzzzzzz', n: 1 }]), { [ringKey.id]: 5, 'unknown:zzzzzzzz': 1 })
})
