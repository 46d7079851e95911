import net from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DatabaseHandle } from '../db/database.ts'
import { ApiError } from './errors.ts'
import { PostgresAllowanceStore } from './rate-limit.repository.ts'
import { hooksOf, type App } from './types.ts'

/**
 * Rate limits: a fixed window per key (a policy and a client, or a policy and an address), counted in one store.
 *
 * The store hands out the window's allowance in leases. In one process (the embedded engine) the lease is the
 * whole remainder, held in memory. On PostgreSQL the processes share one row per key and each lease takes only a
 * slice of what is left (a sixteenth, at least one), so a busy client costs a database round trip every few
 * requests rather than on each, while the leases of all processes together never exceed the limit: a hard bound
 * across processes. What a process leased and did not use before its client's traffic moved elsewhere is lost for
 * the window, so a client spread over many processes may be refused slightly before the limit, never after it.
 *
 * When the store cannot answer (the database is unreachable or slow), requests are let through, with one log
 * line per outage: a limit is not worth an outage of its own.
 */

/** A quota as the RateLimit-Policy header field names it. */
export interface RateLimitPolicy {
  /** The policy's identifier in the headers, and the prefix of its keys. */
  name: string
  /** Requests a key may make in a window. */
  limit: number
  windowSeconds: number
}

/** How a route is limited: under which policy, and whose budget a request draws on. */
export interface RouteRateLimit {
  policy: RateLimitPolicy
  key: (request: FastifyRequest) => string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's own limit instead of the API's, or `false` for none (operational and metadata routes). */
    rateLimit?: RouteRateLimit | false
  }
}

/** Allowance taken from a key's window. */
export interface Lease {
  /** Requests granted by this lease: 0 when the window is spent. */
  granted: number
  /** What the window has left for later leases (by this process or others). */
  unleased: number
  /** Identifies the window, so that a lease of a new window replaces what is left of the old one. */
  windowId: number
  /** Milliseconds until the window ends, by the store's clock. */
  endsInMs: number
}

/** Where the windows are counted: this process's memory, or a table every process shares. */
export interface AllowanceStore {
  lease(key: string, limit: number, windowMs: number): Promise<Lease>
}

export type Decision =
  | { outcome: 'allowed'; remaining: number; resetSeconds: number }
  | { outcome: 'limited'; resetSeconds: number }
  /** The store could not be asked in time: the request goes through uncounted. */
  | { outcome: 'unenforced' }

export interface RateLimitLogger {
  warn(object: Record<string, unknown>, message: string): void
  info(message: string): void
}

/** How long a request waits for a lease, by default, before it is let through uncounted. */
const LEASE_TIMEOUT_MS = 2000
/** After the store failed, how long requests go through without asking it again (so that none waits on it). */
const RETRY_AFTER_FAILURE_MS = 1000
/** Keys remembered at most; the windows ending first are forgotten first. */
const MAX_KEYS = 10_000

interface Entry {
  windowId: number
  /** When the window ends, by this process's clock. */
  endsAt: number
  /** Leased and not used yet. */
  tokens: number
  /** What the window had left for later leases when the last one was taken. */
  unleased: number
  /** The lease being taken for this key, which concurrent requests wait for instead of taking their own. */
  pending: Promise<boolean> | null
}

export class RateLimiter {
  private readonly store: AllowanceStore
  private readonly log: RateLimitLogger
  private readonly clock: () => number
  private readonly leaseTimeoutMs: number
  private readonly entries = new Map<string, Entry>()
  /** Set while the store is failing: until then, requests are not counted. */
  private unavailableUntil: number | null = null

  constructor(store: AllowanceStore, log: RateLimitLogger, options: { clock?: () => number; leaseTimeoutMs?: number } = {}) {
    this.store = store
    this.log = log
    this.clock = options.clock ?? Date.now
    this.leaseTimeoutMs = options.leaseTimeoutMs ?? LEASE_TIMEOUT_MS
  }

  /** Counts one request of `key` under `policy`. */
  async take(key: string, policy: RateLimitPolicy): Promise<Decision> {
    for (;;) {
      const now = this.clock()
      const entry = this.entries.get(key)
      if (entry && entry.endsAt > now) {
        const resetSeconds = Math.max(1, Math.ceil((entry.endsAt - now) / 1000))
        if (entry.tokens > 0) {
          entry.tokens -= 1
          return { outcome: 'allowed', remaining: entry.tokens + entry.unleased, resetSeconds }
        }
        if (entry.unleased === 0) return { outcome: 'limited', resetSeconds }
      }
      if (this.unavailableUntil !== null && now < this.unavailableUntil) return { outcome: 'unenforced' }
      const leased = await this.withinTimeout(entry?.pending ?? this.lease(key, policy, entry))
      if (!leased) return { outcome: 'unenforced' }
      // The lease is shared with the requests that waited for it: take from it like any of them.
    }
  }

  private lease(key: string, policy: RateLimitPolicy, existing: Entry | undefined): Promise<boolean> {
    const entry = existing ?? { windowId: Number.NaN, endsAt: 0, tokens: 0, unleased: 0, pending: null }
    if (!existing) {
      this.forgetOldKeys()
      this.entries.set(key, entry)
    }
    const pending = this.store.lease(key, policy.limit, policy.windowSeconds * 1000).then(
      (lease) => {
        entry.pending = null
        if (lease.windowId !== entry.windowId) {
          entry.windowId = lease.windowId
          entry.tokens = 0
          // Keys stay in the order their windows end in, which is the order they are forgotten in.
          if (this.entries.get(key) === entry) {
            this.entries.delete(key)
            this.entries.set(key, entry)
          }
        }
        entry.tokens += lease.granted
        entry.unleased = lease.unleased
        entry.endsAt = this.clock() + lease.endsInMs
        this.available()
        return true
      },
      (error: unknown) => {
        entry.pending = null
        this.unavailable(error)
        return false
      },
    )
    entry.pending = pending
    return pending
  }

  private async withinTimeout(lease: Promise<boolean>): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.leaseTimeoutMs)
    })
    try {
      const result = await Promise.race([lease, timeout])
      if (result !== 'timeout') return result
      this.unavailable(new Error(`no answer within ${this.leaseTimeoutMs} ms`))
      return false
    } finally {
      clearTimeout(timer)
    }
  }

  private unavailable(error: unknown): void {
    if (this.unavailableUntil === null) {
      this.log.warn({ err: error }, 'rate limits are not enforced: their store does not answer; requests go through until it does')
    }
    this.unavailableUntil = this.clock() + RETRY_AFTER_FAILURE_MS
  }

  private available(): void {
    if (this.unavailableUntil === null) return
    this.unavailableUntil = null
    this.log.info('rate limits are enforced again: their store answers')
  }

  /** Makes room for one more key: forgets ended windows, then the oldest ones if it must. */
  private forgetOldKeys(): void {
    if (this.entries.size < MAX_KEYS) return
    const now = this.clock()
    for (const [key, entry] of this.entries) {
      if (this.entries.size < MAX_KEYS && entry.endsAt > now) break
      if (!entry.pending) this.entries.delete(key)
    }
  }
}

/** One process's windows: each lease is the window's whole remainder, since no other process shares it. */
export class MemoryAllowanceStore implements AllowanceStore {
  private readonly clock: () => number
  private readonly windows = new Map<string, { endsAt: number; used: number }>()

  constructor(clock: () => number = Date.now) {
    this.clock = clock
  }

  lease(key: string, limit: number, windowMs: number): Promise<Lease> {
    const now = this.clock()
    let window = this.windows.get(key)
    if (!window || window.endsAt <= now) {
      this.windows.delete(key)
      this.forgetOldKeys(now)
      window = { endsAt: now + windowMs, used: 0 }
      this.windows.set(key, window)
    }
    const granted = Math.max(0, limit - window.used)
    window.used += granted
    return Promise.resolve({ granted, unleased: 0, windowId: window.endsAt, endsInMs: window.endsAt - now })
  }

  private forgetOldKeys(now: number): void {
    if (this.windows.size < MAX_KEYS) return
    for (const [key, window] of this.windows) {
      if (this.windows.size < MAX_KEYS && window.endsAt > now) break
      this.windows.delete(key)
    }
  }
}

/** The table every process shares on PostgreSQL; this process's memory on the embedded engine (one process). */
export function allowanceStoreFor(database: Pick<DatabaseHandle, 'engine' | 'db'>, log: RateLimitLogger): AllowanceStore {
  if (database.engine === 'pglite') return new MemoryAllowanceStore()
  return new PostgresAllowanceStore(database.db, (error) => log.warn({ err: error }, 'deleting ended rate-limit windows failed'))
}

/** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers): the quota and its window, in seconds. */
export function policyHeader(policy: RateLimitPolicy): string {
  return `"${policy.name}";q=${policy.limit};w=${policy.windowSeconds}`
}

/** `RateLimit`: what is left of the quota, and the seconds until the window ends. */
export function limitHeader(policy: RateLimitPolicy, remaining: number, resetSeconds: number): string {
  return `"${policy.name}";r=${remaining};t=${resetSeconds}`
}

/**
 * The part of a client address a limit counts: an IPv4 address, or the /64 network of an IPv6 address (one host
 * commonly holds a whole /64, and could otherwise take a fresh budget with every address of it).
 */
export function addressKey(address: string): string {
  if (!net.isIPv6(address)) return address.toLowerCase()
  const groups = ipv6Groups(address.split('%')[0]!)
  const mappedIpv4 = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff
  if (mappedIpv4) return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.')
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`
}

/** The eight 16-bit groups of a valid IPv6 address (with `::` expanded and a trailing dotted IPv4 part converted). */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((piece) => {
          if (!piece.includes('.')) return [Number.parseInt(piece, 16)]
          const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number]
          return [(a << 8) | b, (c << 8) | d]
        })
  const [head = '', tail] = address.split('::')
  const first = parse(head)
  if (tail === undefined) return first
  const last = parse(tail)
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last]
}

/** The API's default budget: the authenticated client's, else the address's (public routes, before a token). */
export function clientKey(request: FastifyRequest): string {
  return request.principal ? `client:${request.principal.clientId}` : `address:${addressKey(request.ip)}`
}

/**
 * Limits every route registered after this call: by its own `config.rateLimit`, else by `global` (none when null).
 * The check is a route preHandler, so that it knows the authenticated client, and runs before the preHandlers
 * registered after it (an Idempotency-Key is claimed only by a request the limit let through).
 */
export function registerRateLimits(app: App, limiter: RateLimiter, global: RouteRateLimit | null): void {
  app.addHook('onRoute', (route) => {
    const own = route.config?.rateLimit
    const limit = own === false ? null : (own ?? global)
    if (!limit) return
    const { policy, key } = limit
    const policyValue = policyHeader(policy)
    const check = async (request: FastifyRequest, reply: FastifyReply) => {
      const decision = await limiter.take(`${policy.name}:${key(request)}`, policy)
      if (decision.outcome === 'unenforced') return
      reply.header('ratelimit-policy', policyValue)
      if (decision.outcome === 'allowed') {
        reply.header('ratelimit', limitHeader(policy, decision.remaining, decision.resetSeconds))
        return
      }
      reply.header('ratelimit', limitHeader(policy, 0, decision.resetSeconds))
      throw new ApiError(429, 'too_many_requests', `Too many requests; retry after ${decision.resetSeconds} seconds`, undefined, {
        'retry-after': String(decision.resetSeconds),
      })
    }
    route.preHandler = [...hooksOf(route.preHandler), check]
  })
}
