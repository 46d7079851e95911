import type { LookupAddress } from 'node:dns'
import { lookup as dnsLookup } from 'node:dns/promises'
import http from 'node:http'
import https from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { isPublicAddress, OutboundAddressRefused, type Resolver } from '../../lib/outbound-address.ts'

/**
 * The HTTP client that delivers signed webhook messages to the endpoints clients registered. Those URLs come from
 * clients, so every connection is a server-side request forgery risk: see `checkedLookup` and the IP-literal check
 * in `send`.
 */

export type DeliveryError = 'timeout' | 'address-refused' | 'dns-failed' | 'connection-failed' | 'tls-failed' | 'redirect' | 'http-status' | 'url-invalid'

export interface DeliveryOutcome {
  /** 2xx answer received in time. */
  ok: boolean
  /** The HTTP status answered, null when none was received. */
  status: number | null
  /** From the start of the attempt to the end of reading the answer (or the failure), whole milliseconds. */
  durationMs: number
  /** The first bytes of the answer body decoded as UTF-8 (at most `excerptBytes`, default 1024; no broken trailing character), '' when none. */
  excerpt: string
  /** Why the attempt failed; null when ok. 'http-status' = a non-2xx, non-3xx status; 'redirect' = a 3xx (never followed). */
  error: DeliveryError | null
  /** A short human-readable reason for operators (never containing headers or the body sent). */
  message: string | null
}

export interface WebhookSenderOptions {
  /** Deployment rule: in production only public addresses may be reached; sandbox allows loopback/private ones. */
  allowPrivateAddresses: boolean
  /** The whole attempt: connect, answer headers and reading the bounded body. */
  timeoutMs: number
  /** Defaults to the system resolver. */
  resolver?: Resolver
  /** How much of an answer is read at most (default 64 KiB); beyond it the socket is destroyed, the outcome still judged by status. */
  maxResponseBytes?: number
  /** Default 1024. */
  excerptBytes?: number
  /** Default 'Tessera-Webhooks/1'. */
  userAgent?: string
}

export interface DeliveryRequest {
  url: string
  headers: Record<string, string>
  /** JSON text. */
  body: string
  signal?: AbortSignal
}

const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true })

// Bounds the pool per endpoint: a slow endpoint cannot take every file descriptor of the worker.
const MAX_SOCKETS_PER_ENDPOINT = 50
// Some endpoints never close an idle connection; an idle pooled socket is dropped after this long.
const IDLE_SOCKET_MS = 30_000

/** A resolver failure, told apart from a connection failure whatever code (or none) the resolver gave. */
class ResolutionFailed extends Error {
  constructor(host: string, cause?: unknown) {
    const code = (cause as { code?: unknown } | undefined)?.code
    super(`${host} did not resolve${typeof code === 'string' ? ` (${code})` : ''}`, { cause })
  }
}

/**
 * The `lookup` of the sender's agents: the address a new socket connects to is one this function checked, so a
 * second resolution (DNS rebinding) cannot swap it. Every address the name resolves to must be public, as in
 * `publicAddresses`. Node calls it in two shapes: with `options.all` (the default, autoSelectFamily) it expects an
 * array of `{address, family}`; without (a `family` option, or autoSelectFamily off) one `(address, family)`.
 * Node never calls it for an IP literal: `send` checks those itself.
 */
function checkedLookup(resolve: Resolver, allowPrivateAddresses: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0
    resolve(hostname).then(
      (entries) => {
        const addresses: LookupAddress[] = entries.map(({ address }) => ({ address, family: isIP(address) }))
        const refused = allowPrivateAddresses ? [] : addresses.filter(({ address }) => !isPublicAddress(address))
        if (refused.length > 0) return callback(new OutboundAddressRefused(hostname, refused.map(({ address }) => address)), '')
        const usable = wanted === 0 ? addresses : addresses.filter(({ family }) => family === wanted)
        const [first] = usable
        if (first === undefined) return callback(new ResolutionFailed(hostname), '')
        if (options.all) callback(null, usable)
        else callback(null, first.address, first.family)
      },
      (error: unknown) => callback(new ResolutionFailed(hostname, error), ''),
    )
  }
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|INVALID_CA$|INVALID_PURPOSE$|PATH_LENGTH_EXCEEDED$|HOSTNAME_MISMATCH$|EPROTO$)/

/** What a request error means to an operator. EPROTO is OpenSSL's "not TLS" (an https URL on a plain port). */
function failureOf(error: unknown): { error: DeliveryError; message: string } {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof OutboundAddressRefused) return { error: 'address-refused', message }
  if (error instanceof ResolutionFailed) return { error: 'dns-failed', message }
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string' && TLS_CODE.test(code)) return { error: 'tls-failed', message: `${code}: ${message}` }
  return { error: 'connection-failed', message }
}

/** The verdict on a received status. */
function judged(status: number): { ok: boolean; error: DeliveryError | null; message: string | null } {
  if (status >= 200 && status < 300) return { ok: true, error: null, message: null }
  if (status >= 300 && status < 400) return { ok: false, error: 'redirect', message: `answered ${status}: redirects are not followed` }
  return { ok: false, error: 'http-status', message: `answered ${status}` }
}

/** The URL to deliver to, or why it cannot be (never echoing the URL: it may carry secrets). WHATWG URL requires a host for http(s). */
/** Targets parsed before, by URL: an endpoint's URL is parsed once, not at every delivery. */
const targets = new Map<string, URL | string>()

function targetOf(url: string): URL | string {
  let target = targets.get(url)
  if (target === undefined) {
    if (targets.size >= 1000) targets.clear()
    target = parseTarget(url)
    targets.set(url, target)
  }
  return target
}

function parseTarget(url: string): URL | string {
  const parsed = URL.parse(url)
  if (parsed === null) return 'not a URL'
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `only http and https URLs are delivered to, not ${parsed.protocol}`
  if (parsed.username !== '' || parsed.password !== '') return 'the URL carries credentials'
  return parsed
}

/** UTF-8 text of bytes that may end inside a character: that character is left out (never half of it). */
function wholeCharacters(bytes: Buffer): string {
  let end = bytes.length
  // The last character's first byte is at most three bytes back; drop it if its sequence does not fit.
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!
    if ((byte & 0xc0) === 0x80) continue
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    if (length > back) end = bytes.length - back
    break
  }
  return bytes.toString('utf8', 0, end)
}

export class WebhookSender {
  readonly #allowPrivateAddresses: boolean
  readonly #timeoutMs: number
  readonly #maxResponseBytes: number
  readonly #excerptBytes: number
  readonly #userAgent: string
  // One pool per scheme for the sender's life: consecutive deliveries to an endpoint reuse its sockets, each of which
  // was checked when it connected.
  readonly #http: http.Agent
  readonly #https: https.Agent

  constructor(options: WebhookSenderOptions) {
    this.#allowPrivateAddresses = options.allowPrivateAddresses
    this.#timeoutMs = options.timeoutMs
    this.#maxResponseBytes = options.maxResponseBytes ?? 64 * 1024
    this.#excerptBytes = options.excerptBytes ?? 1024
    this.#userAgent = options.userAgent ?? 'Tessera-Webhooks/1'
    const agentOptions = {
      keepAlive: true,
      maxSockets: MAX_SOCKETS_PER_ENDPOINT,
      timeout: IDLE_SOCKET_MS,
      lookup: checkedLookup(options.resolver ?? systemResolver, options.allowPrivateAddresses),
    }
    this.#http = new http.Agent(agentOptions)
    this.#https = new https.Agent(agentOptions)
  }

  /** POSTs `body` (JSON text) with `headers` to `url`; never throws (every failure is an outcome). */
  send(request: DeliveryRequest): Promise<DeliveryOutcome> {
    const started = performance.now()
    const outcome = (fields: Partial<DeliveryOutcome>): DeliveryOutcome => ({
      ok: false,
      status: null,
      excerpt: '',
      error: null,
      message: null,
      ...fields,
      durationMs: Math.round(performance.now() - started),
    })

    const target = targetOf(request.url)
    if (typeof target === 'string') return Promise.resolve(outcome({ error: 'url-invalid', message: target }))
    const hostname = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname
    // Node connects to an IP literal without calling the agent's lookup, so the literal is checked here.
    if (!this.#allowPrivateAddresses && isIP(hostname) !== 0 && !isPublicAddress(hostname)) {
      return Promise.resolve(outcome({ error: 'address-refused', message: new OutboundAddressRefused(target.hostname, [hostname]).message }))
    }
    if (request.signal?.aborted) return Promise.resolve(outcome({ error: 'timeout', message: 'aborted' }))

    const { promise, resolve } = Promise.withResolvers<DeliveryOutcome>()
    const excerptChunks: Buffer[] = []
    let excerptLength = 0
    let received = 0
    let status: number | null = null
    let settled = false
    const excerpt = () => wholeCharacters(excerptChunks.length === 1 ? excerptChunks[0]! : Buffer.concat(excerptChunks))
    const settle = (fields: Partial<DeliveryOutcome>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      request.signal?.removeEventListener('abort', onAbort)
      resolve(outcome({ status, excerpt: excerpt(), ...fields }))
    }

    let outgoing: http.ClientRequest
    try {
      outgoing = (target.protocol === 'https:' ? https : http).request({
        method: 'POST',
        hostname,
        port: target.port === '' ? undefined : Number(target.port),
        path: `${target.pathname}${target.search}`,
        agent: target.protocol === 'https:' ? this.#https : this.#http,
        headers: {
          ...request.headers,
          'content-type': 'application/json',
          'user-agent': this.#userAgent,
          'content-length': String(Buffer.byteLength(request.body)),
        },
      })
    } catch (error) {
      // A header the caller gave that HTTP cannot carry.
      return Promise.resolve(outcome(failureOf(error)))
    }
    const timer = setTimeout(() => {
      settle({ error: 'timeout', message: `no complete answer within ${this.#timeoutMs} ms` })
      outgoing.destroy()
    }, this.#timeoutMs)
    const onAbort = () => {
      settle({ error: 'timeout', message: 'aborted' })
      outgoing.destroy()
    }
    request.signal?.addEventListener('abort', onAbort, { once: true })

    // Errors after settling (the destroy above, a reset after a cut answer) are expected and ignored, not unhandled.
    outgoing.on('error', (error) => settle(failureOf(error)))
    outgoing.on('response', (answer) => {
      status = answer.statusCode ?? null
      answer.on('error', (error) => settle(failureOf(error)))
      answer.on('data', (chunk: Buffer) => {
        if (excerptLength < this.#excerptBytes) {
          const part = chunk.subarray(0, this.#excerptBytes - excerptLength)
          excerptChunks.push(part)
          excerptLength += part.length
        }
        received += chunk.length
        if (received > this.#maxResponseBytes) {
          settle(judged(answer.statusCode ?? 0))
          // The rest of the answer is still on the socket: it cannot go back to the pool.
          answer.destroy()
        }
      })
      // Reading to the end is what returns the socket to the pool.
      answer.on('end', () => settle(judged(answer.statusCode ?? 0)))
    })
    outgoing.end(request.body)
    return promise
  }

  /** Closes pooled keep-alive sockets. */
  close(): void {
    this.#http.destroy()
    this.#https.destroy()
  }
}
