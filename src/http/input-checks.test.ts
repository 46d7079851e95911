import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { inputViolations, MAX_DEPTH } from './input-checks.ts'

test('U+0000 and unpaired surrogates are refused in values and keys, with the property path', () => {
  assert.deepEqual(inputViolations({ name: 'a\u0000b', address: { lines: ['ok', '\ud800'] }, ['k\u0000']: 1 }), [
    { property: 'name', rule: 'characters', ruleParams: { disallowed: 'U+0000' } },
    { property: 'address.lines[1]', rule: 'characters', ruleParams: { disallowed: 'unpaired surrogate' } },
    { property: 'k\u0000', rule: 'characters', ruleParams: { disallowed: 'U+0000' } },
  ])
  assert.deepEqual(inputViolations('\udc00x'), [{ property: '', rule: 'characters', ruleParams: { disallowed: 'unpaired surrogate' } }])
})

test('text any database stores passes, paired surrogates (emoji) and U+FFFD included', () => {
  assert.deepEqual(inputViolations({ emoji: '😀', replacement: '\ufffd', text: 'Zürich', n: 1, nothing: null, list: [true, 2.5] }), [])
})

/** The rule, said recursively: what the iterative walk must find. */
function refused(value: unknown, depth = 0): boolean {
  const bad = (text: string) => text.includes('\u0000') || !text.isWellFormed()
  if (typeof value === 'string') return bad(value)
  if (value === null || typeof value !== 'object') return false
  if (depth >= MAX_DEPTH) return true
  return Object.entries(value).some(([key, child]) => (!Array.isArray(value) && bad(key)) || refused(child, depth + 1))
}

test('any JSON value is refused exactly when it holds such text or nests too deep', () => {
  fc.assert(
    fc.property(fc.jsonValue({ stringUnit: 'binary', maxDepth: MAX_DEPTH + 2 }), (value) => {
      assert.equal(inputViolations(value).length > 0, refused(value))
    }),
    { numRuns: 200 },
  )
})

test(`objects and arrays nested more than ${MAX_DEPTH} levels are refused, without recursion however deep`, () => {
  let nested: unknown = 1
  for (let level = 0; level < MAX_DEPTH; level++) nested = { a: nested }
  assert.deepEqual(inputViolations(nested), [])
  assert.deepEqual(inputViolations([nested]), [{ property: `[0]${'.a'.repeat(MAX_DEPTH - 1)}`, rule: 'maxDepth', ruleParams: { limit: MAX_DEPTH } }])
  const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`) as unknown
  assert.equal(inputViolations(deep)[0]?.rule, 'maxDepth')
})

test('at most ten violations are reported', () => {
  assert.equal(inputViolations(Array.from({ length: 50 }, () => '\u0000')).length, 10)
})
