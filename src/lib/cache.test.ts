import assert from 'node:assert/strict'
import { test } from 'node:test'
import { InvalidatedCache } from './cache.ts'

test('loads once, then serves from memory', async () => {
  const cache = new InvalidatedCache<string>({ maxEntries: 10, ttlMs: 1000 })
  let loads = 0
  const loader = async () => `value-${++loads}`
  assert.equal(await cache.load('a', loader), 'value-1')
  assert.equal(await cache.load('a', loader), 'value-1')
  assert.equal(loads, 1)
})

test('an evicted key is read again', async () => {
  const cache = new InvalidatedCache<number>({ maxEntries: 10, ttlMs: 1000 })
  let value = 1
  assert.equal(await cache.load('k', async () => value), 1)
  value = 2
  cache.evict('k')
  assert.equal(await cache.load('k', async () => value), 2)
})

test('a read that overlaps an invalidation is not stored', async () => {
  const cache = new InvalidatedCache<string>({ maxEntries: 10, ttlMs: 1000 })
  let release!: () => void
  const slow = cache.load('user', () => new Promise<string>((resolve) => (release = () => resolve('stale'))))
  cache.evict('user')
  release()
  assert.equal(await slow, 'stale', 'the caller still gets what it read')
  assert.equal(cache.get('user'), undefined, 'but it is not cached')
})

test('nothing found is not cached', async () => {
  const cache = new InvalidatedCache<string>({ maxEntries: 10, ttlMs: 1000 })
  assert.equal(await cache.load('missing', async () => undefined), undefined)
  assert.equal(await cache.load('missing', async () => 'created'), 'created')
})

test('entries expire after the TTL', async () => {
  let now = 0
  const cache = new InvalidatedCache<string>({ maxEntries: 10, ttlMs: 100, now: () => now })
  await cache.load('a', async () => 'first')
  now = 99
  assert.equal(cache.get('a'), 'first')
  now = 100
  assert.equal(cache.get('a'), undefined)
})

test('the oldest entry makes room when full', async () => {
  const cache = new InvalidatedCache<string>({ maxEntries: 2, ttlMs: 1000 })
  for (const key of ['a', 'b', 'c']) await cache.load(key, async () => key)
  assert.equal(cache.size, 2)
  assert.equal(cache.get('a'), undefined)
  assert.equal(cache.get('c'), 'c')
})

test('while invalidations cannot be trusted, nothing is served or stored', async () => {
  let trusted = true
  const cache = new InvalidatedCache<string>({ maxEntries: 10, ttlMs: 1000, trusted: () => trusted })
  await cache.load('a', async () => 'cached')
  trusted = false
  assert.equal(await cache.load('a', async () => 'fresh'), 'fresh')
  trusted = true
  assert.equal(await cache.load('a', async () => 'fresher'), 'fresher', 'what was read while untrusted was not kept')
})
