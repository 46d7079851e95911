import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addressKey, limitHeader, MemoryAllowanceStore, policyHeader, RateLimiter, type AllowanceStore, type Lease, type RateLimitLogger } from './rate-limit.ts'

const POLICY = { name: 'default', limit: 3, windowSeconds: 60 }

function fakeClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let now = start
  return { now: () => now, advance: (ms) => (now += ms) }
}

function recordingLog(): RateLimitLogger & { lines: string[] } {
  const lines: string[] = []
  return { lines, warn: (_object, message) => lines.push(`warn: ${message}`), info: (message) => lines.push(`info: ${message}`) }
}

/** The memory store, counting the leases asked of it. */
class CountingStore implements AllowanceStore {
  readonly inner: MemoryAllowanceStore
  leases = 0
  constructor(clock: () => number) {
    this.inner = new MemoryAllowanceStore(clock)
  }
  lease(key: string, limit: number, windowMs: number): Promise<Lease> {
    this.leases += 1
    return this.inner.lease(key, limit, windowMs)
  }
}

test('a key gets its limit per window, with what is left and the seconds to the window end', async () => {
  const clock = fakeClock()
  const limiter = new RateLimiter(new MemoryAllowanceStore(clock.now), recordingLog(), { clock: clock.now })
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'allowed', remaining: 2, resetSeconds: 60 })
  clock.advance(10_500)
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'allowed', remaining: 1, resetSeconds: 50 })
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'allowed', remaining: 0, resetSeconds: 50 })
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'limited', resetSeconds: 50 })
  assert.deepEqual(await limiter.take('b', POLICY), { outcome: 'allowed', remaining: 2, resetSeconds: 60 }, 'another key has its own window')

  clock.advance(49_500)
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'allowed', remaining: 2, resetSeconds: 60 }, 'a new window starts once the last one ended')
})

test('in one process, a window costs one lease however many requests it serves', async () => {
  const clock = fakeClock()
  const store = new CountingStore(clock.now)
  const limiter = new RateLimiter(store, recordingLog(), { clock: clock.now })
  const policy = { ...POLICY, limit: 50 }
  const outcomes = await Promise.all(Array.from({ length: 60 }, () => limiter.take('a', policy)))
  assert.equal(outcomes.filter((d) => d.outcome === 'allowed').length, 50)
  assert.equal(outcomes.filter((d) => d.outcome === 'limited').length, 10)
  assert.equal(store.leases, 1, 'concurrent requests wait for the one lease in progress')
})

test('a store that fails lets requests through, logs once per outage, and is asked again a moment later', async () => {
  const clock = fakeClock()
  const log = recordingLog()
  const memory = new MemoryAllowanceStore(clock.now)
  let failing = true
  let asked = 0
  const store: AllowanceStore = {
    lease: (key, limit, windowMs) => {
      asked += 1
      return failing ? Promise.reject(new Error('connection refused')) : memory.lease(key, limit, windowMs)
    },
  }
  const limiter = new RateLimiter(store, log, { clock: clock.now })
  for (let i = 0; i < 5; i++) assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'unenforced' })
  assert.equal(asked, 1, 'while it is down, the store is not asked on every request')
  clock.advance(1_000)
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'unenforced' })
  assert.equal(asked, 2)
  assert.equal(log.lines.length, 1, log.lines.join('\n'))
  assert.match(log.lines[0]!, /^warn: rate limits are not enforced/)

  failing = false
  clock.advance(1_000)
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'allowed', remaining: 2, resetSeconds: 60 })
  assert.match(log.lines[1]!, /^info: rate limits are enforced again/)
})

test('a store that does not answer in time lets the waiting request through', async () => {
  const log = recordingLog()
  const limiter = new RateLimiter({ lease: () => new Promise<Lease>(() => {}) }, log, { leaseTimeoutMs: 20 })
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'unenforced' })
  assert.match(log.lines[0]!, /^warn: rate limits are not enforced/)
})

test('a lease answered late still counts: the requests after it are served from it', async () => {
  const clock = fakeClock()
  const memory = new MemoryAllowanceStore(clock.now)
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => (release = resolve))
  let asked = 0
  const store: AllowanceStore = {
    lease: async (key, limit, windowMs) => {
      asked += 1
      return gate.then(() => memory.lease(key, limit, windowMs))
    },
  }
  const limiter = new RateLimiter(store, recordingLog(), { clock: clock.now, leaseTimeoutMs: 10 })
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'unenforced' })
  release()
  clock.advance(1_000)
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'allowed', remaining: 2, resetSeconds: 60 })
  assert.deepEqual(await limiter.take('a', POLICY), { outcome: 'allowed', remaining: 1, resetSeconds: 60 })
  assert.equal(asked, 1)
})

test('headers follow the RateLimit header fields draft', () => {
  assert.equal(policyHeader({ name: 'default', limit: 1200, windowSeconds: 60 }), '"default";q=1200;w=60')
  assert.equal(limitHeader({ name: 'token', limit: 60, windowSeconds: 60 }, 59, 42), '"token";r=59;t=42')
})

test('addresses are counted per IPv4 address and per IPv6 /64 network', () => {
  assert.equal(addressKey('203.0.113.7'), '203.0.113.7')
  assert.equal(addressKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64')
  assert.equal(addressKey('2001:DB8:1:2::9'), '2001:db8:1:2::/64')
  assert.equal(addressKey('2001:0db8:0001:0002:ffff::1'), '2001:db8:1:2::/64')
  assert.equal(addressKey('2001:db8::'), '2001:db8:0:0::/64')
  assert.equal(addressKey('::1'), '0:0:0:0::/64')
  assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64')
  assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7', 'an IPv4-mapped address is its IPv4 address')
  assert.equal(addressKey('::ffff:cb00:7107'), '203.0.113.7')
  assert.equal(addressKey('2001:db8:1:2::203.0.113.7'), '2001:db8:1:2::/64')
})
