import assert from 'node:assert/strict'
import { test } from 'node:test'
import { conditionMatches, formatEntityTag, parseEntityTags } from './conditional.ts'

const tag = 'b59c6960e8c802ec287f3892b398b7b58eb4790640414f2c2b048ff22f873d72'

test('tags are accepted quoted, unquoted, weak, in any case and in lists', () => {
  for (const header of [`"${tag}"`, tag, `W/"${tag}"`, `W/${tag}`, ` "${tag.toUpperCase()}" `]) assert.deepEqual(parseEntityTags(header), [tag], header)
  assert.deepEqual(parseEntityTags(`"${'a'.repeat(64)}", "${tag}"`), ['a'.repeat(64), tag])
  assert.equal(parseEntityTags('*'), '*')
  assert.equal(parseEntityTags(undefined), undefined)
})

test('malformed tags are rejected', () => {
  for (const header of ['', 'abc', `"${tag}x"`, `"${tag.slice(1)}"`, `${tag}, nope`, 'W/*']) assert.equal(parseEntityTags(header), null, header)
})

test('a condition matches the current tag, and * matches any existing one', () => {
  assert.equal(conditionMatches([tag], tag), true)
  assert.equal(conditionMatches(['a'.repeat(64)], tag), false)
  assert.equal(conditionMatches('*', tag), true)
  assert.equal(conditionMatches('*', undefined), false)
  assert.equal(formatEntityTag(tag), `"${tag}"`)
})
