import type { LookupAddress } from 'node:dns'
import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP, type LookupFunction } from 'node:net'
import { Agent, type Dispatcher } from 'undici'
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
// Some endpoints never close an idle connection; an idle pooled socket is dropped after this long (sooner when the
// endpoint's Keep-Alive header announces a shorter timeout). A pool whose sockets are all closed is dropped with them.
const IDLE_SOCKET_MS = 30_000

/** A resolver failure, told apart from a connection failure whatever code (or none) the resolver gave. */
class ResolutionFailed extends Error {
  constructor(host: string, cause?: unknown) {
    const code = (cause as { code?: unknown } | undefined)?.code
    super(`${host} did not resolve${typeof code === 'string' ? ` (${code})` : ''}`, { cause })
  }
}

/**
 * The `lookup` of the sender's connections (undici hands it to `net.connect` and `tls.connect`): the address a new
 * socket connects to is one this function checked, so a second resolution (DNS rebinding) cannot swap it. Every
 * address the name resolves to must be public, as in `publicAddresses`. Node calls it in two shapes: with
 * `options.all` (the default, autoSelectFamily) it expects an array of `{address, family}`; without (a `family`
 * option, or autoSelectFamily off) one `(address, family)`. Node never calls it for an IP literal: `send` checks
 * those itself.
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

/** Where a delivery goes: the origin (scheme, host, port) whose pool carries it, the host as connected to, the path. */
interface Target {
  origin: string
  /** The host without the brackets of an IPv6 literal. */
  hostname: string
  /** The host as written in the URL (brackets kept), for messages. */
  host: string
  path: string
}

/** Targets parsed before, by URL: an endpoint's URL is parsed once, not at every delivery. */
const targets = new Map<string, Target | string>()

function targetOf(url: string): Target | string {
  let target = targets.get(url)
  if (target === undefined) {
    if (targets.size >= 1000) targets.clear()
    target = parseTarget(url)
    targets.set(url, target)
  }
  return target
}

/** The URL to deliver to, or why it cannot be (never echoing the URL: it may carry secrets). WHATWG URL requires a host for http(s). */
function parseTarget(url: string): Target | string {
  const parsed = URL.parse(url)
  if (parsed === null) return 'not a URL'
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `only http and https URLs are delivered to, not ${parsed.protocol}`
  if (parsed.username !== '' || parsed.password !== '') return 'the URL carries credentials'
  const host = parsed.hostname
  return { origin: parsed.origin, hostname: host.startsWith('[') ? host.slice(1, -1) : host, host, path: `${parsed.pathname}${parsed.search}` }
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

/** The reason an attempt's request is aborted with: the sender gave up on it (its outcome is already settled). */
class GivenUp extends Error {}

/**
 * One attempt, as undici's dispatch handler: it keeps the status and the excerpt, bounds what is read, and settles the
 * outcome once, at the first of the answer's end, the cut at `maxResponseBytes`, an error, the timeout and the abort.
 */
class Attempt implements Dispatcher.DispatchHandler {
  readonly promise: Promise<DeliveryOutcome>
  readonly #resolve: (outcome: DeliveryOutcome) => void
  readonly #started: number
  readonly #maxResponseBytes: number
  readonly #excerptBytes: number
  readonly #signal: AbortSignal | undefined
  #timer: NodeJS.Timeout | undefined
  #controller: Dispatcher.DispatchController | null = null
  /** Set when the sender gave up before undici started the request (queued, connecting): aborted once it starts. */
  #givenUp: GivenUp | null = null
  #status: number | null = null
  #excerptChunks: Buffer[] = []
  #excerptLength = 0
  #received = 0
  /** The whole answer was read: its outcome is settled a moment later (see onResponseEnd), whatever happens meanwhile. */
  #ended = false
  #settled = false

  constructor(started: number, timeoutMs: number, maxResponseBytes: number, excerptBytes: number, signal: AbortSignal | undefined) {
    const { promise, resolve } = Promise.withResolvers<DeliveryOutcome>()
    this.promise = promise
    this.#resolve = resolve
    this.#started = started
    this.#maxResponseBytes = maxResponseBytes
    this.#excerptBytes = excerptBytes
    this.#signal = signal
    this.#timer = setTimeout(() => this.#giveUp({ error: 'timeout', message: `no complete answer within ${timeoutMs} ms` }), timeoutMs)
    signal?.addEventListener('abort', this.#onAbort, { once: true })
  }

  readonly #onAbort = () => this.#giveUp({ error: 'timeout', message: 'aborted' })

  /** Settles as told and aborts the request: its socket is destroyed, never reused with an answer half read. */
  #giveUp(fields: Partial<DeliveryOutcome>): void {
    if (this.#ended) return this.#settle(judged(this.#status ?? 0))
    this.#settle(fields)
    const reason = new GivenUp(fields.message ?? 'given up')
    if (this.#controller === null) this.#givenUp = reason
    else this.#controller.abort(reason)
  }

  #settle(fields: Partial<DeliveryOutcome>): void {
    if (this.#settled) return
    this.#settled = true
    clearTimeout(this.#timer)
    this.#signal?.removeEventListener('abort', this.#onAbort)
    const chunks = this.#excerptChunks
    const excerpt = chunks.length === 0 ? '' : wholeCharacters(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))
    this.#resolve(outcomeOf(this.#started, { status: this.#status, excerpt, ...fields }))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    if (this.#givenUp !== null) controller.abort(this.#givenUp)
    else this.#controller = controller
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#status = statusCode
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#excerptLength < this.#excerptBytes) {
      const part = chunk.subarray(0, this.#excerptBytes - this.#excerptLength)
      this.#excerptChunks.push(part)
      this.#excerptLength += part.length
    }
    this.#received += chunk.length
    if (this.#received > this.#maxResponseBytes) {
      this.#settle(judged(this.#status ?? 0))
      // The rest of the answer is still on the socket: aborting destroys it, it never goes back to the pool.
      controller.abort(new GivenUp(`answer longer than ${this.#maxResponseBytes} bytes`))
    }
  }

  // Reading to the end is what returns the socket to the pool, but undici makes it available again only in a
  // setImmediate it queues after this call. The outcome is settled after that one (a microtask runs once undici's call
  // returned, its setImmediate then queues behind undici's): the next delivery to the endpoint, which the caller starts
  // at once, finds the socket free instead of opening another.
  onResponseEnd(): void {
    this.#ended = true
    queueMicrotask(() => setImmediate(() => this.#settle(judged(this.#status ?? 0))))
  }

  // Errors after settling (the aborts above, a reset after a cut answer) are expected and ignored.
  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#settle(failureOf(error))
  }
}

function outcomeOf(started: number, fields: Partial<DeliveryOutcome>): DeliveryOutcome {
  return { ok: false, status: null, excerpt: '', error: null, message: null, ...fields, durationMs: Math.round(performance.now() - started) }
}

export class WebhookSender {
  readonly #allowPrivateAddresses: boolean
  readonly #timeoutMs: number
  readonly #maxResponseBytes: number
  readonly #excerptBytes: number
  readonly #userAgent: string
  // A pool per origin (scheme, host, port) for the sender's life: consecutive deliveries to an endpoint reuse its
  // sockets, each of which was checked when it connected. A pool is dropped once its last socket closed (idle sockets
  // after IDLE_SOCKET_MS), so the pools are those of the endpoints delivered to lately.
  #agent: Agent
  readonly #createAgent: () => Agent

  constructor(options: WebhookSenderOptions) {
    this.#allowPrivateAddresses = options.allowPrivateAddresses
    this.#timeoutMs = options.timeoutMs
    this.#maxResponseBytes = options.maxResponseBytes ?? 64 * 1024
    this.#excerptBytes = options.excerptBytes ?? 1024
    this.#userAgent = options.userAgent ?? 'Tessera-Webhooks/1'
    const lookup = checkedLookup(options.resolver ?? systemResolver, options.allowPrivateAddresses)
    this.#createAgent = () => new Agent({
      connections: MAX_SOCKETS_PER_ENDPOINT,
      // HTTP/1.1 only, one request at a time on a socket (no pipelining).
      allowH2: false,
      pipelining: 1,
      keepAliveTimeout: IDLE_SOCKET_MS,
      keepAliveMaxTimeout: IDLE_SOCKET_MS,
      // The attempt's own timer bounds it; a connection still being made when it fires is given up at the same bound
      // (undici's default of 10 s would end it sooner than the attempt's bound, as a connection failure).
      connectTimeout: options.timeoutMs,
      headersTimeout: 0,
      bodyTimeout: 0,
      // Handed to net.connect / tls.connect: the address connected to is the one checked. TLS keeps the URL's name
      // for SNI and the certificate check (undici takes it from the origin's host), and the Host header keeps it too.
      connect: { lookup },
    })
    this.#agent = this.#createAgent()
  }

  /** POSTs `body` (JSON text) with `headers` to `url`; never throws (every failure is an outcome). */
  send(request: DeliveryRequest): Promise<DeliveryOutcome> {
    const started = performance.now()
    const target = targetOf(request.url)
    if (typeof target === 'string') return Promise.resolve(outcomeOf(started, { error: 'url-invalid', message: target }))
    // Node connects to an IP literal without calling the lookup, so the literal is checked here.
    if (!this.#allowPrivateAddresses && isIP(target.hostname) !== 0 && !isPublicAddress(target.hostname)) {
      const refused = new OutboundAddressRefused(target.host, [target.hostname])
      return Promise.resolve(outcomeOf(started, { error: 'address-refused', message: refused.message }))
    }
    if (request.signal?.aborted) return Promise.resolve(outcomeOf(started, { error: 'timeout', message: 'aborted' }))

    const attempt = new Attempt(started, this.#timeoutMs, this.#maxResponseBytes, this.#excerptBytes, request.signal)
    try {
      // A header the caller gave that HTTP cannot carry, or a closed sender, ends in onResponseError (or throws).
      this.#agent.dispatch(
        {
          origin: target.origin,
          method: 'POST',
          path: target.path,
          headers: { ...request.headers, 'content-type': 'application/json', 'user-agent': this.#userAgent },
          body: request.body,
        },
        attempt,
      )
    } catch (error) {
      attempt.onResponseError(null, error instanceof Error ? error : new Error(String(error)))
    }
    return attempt.promise
  }

  /** Closes pooled keep-alive sockets (deliveries in flight end as connection failures); a later send opens new ones. */
  close(): void {
    const closing = this.#agent
    this.#agent = this.#createAgent()
    closing.destroy().catch(() => {})
  }
}
