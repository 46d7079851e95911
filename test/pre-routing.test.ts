/**
 * Answers made before (or instead of) routing, over a real socket: what Node's HTTP parser refuses, a path that
 * does not decode, a body over the limit, a request without Host, one arriving while the server closes. Each
 * carries the request id and the error envelope with a catalogued code and status, as every other answer does.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import net, { type AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { loggerOptions } from '../src/app.ts'
import { ERROR_CATALOGUE } from '../src/http/error-catalogue.ts'
import { ENGINES, startApp, startAppWith, type TestContext } from './helpers.ts'

const BODY_LIMIT = 4096
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/** Every complete response in `data`, in order. */
function parseResponses(data: Buffer): RawResponse[] {
  const responses: RawResponse[] = []
  let rest = data
  for (;;) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) return responses
    const [statusLine, ...lines] = rest.subarray(0, end).toString('latin1').split('\r\n')
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
    const length = Number(headers['content-length'] ?? 0)
    if (rest.length < end + 4 + length) return responses
    responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.subarray(end + 4, end + 4 + length).toString('utf8') })
    rest = rest.subarray(end + 4 + length)
  }
}

/**
 * Writes `chunks` to a new connection (waiting `pauseMs` between them) and reads until `count` responses arrived
 * or the server closed the connection.
 */
function exchange(port: number, chunks: (string | Buffer)[], options: { count?: number; pauseMs?: number; between?: () => unknown } = {}): Promise<RawResponse[]> {
  const { count = 1, pauseMs = 0 } = options
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    let received = Buffer.alloc(0)
    const finish = () => {
      socket.destroy()
      resolve(parseResponses(received))
    }
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data])
      if (parseResponses(received).length >= count) finish()
    })
    socket.on('close', finish)
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? finish() : reject(error)))
    socket.on('connect', async () => {
      for (const [index, chunk] of chunks.entries()) {
        if (index > 0 && pauseMs > 0) {
          await new Promise((r) => setTimeout(r, pauseMs))
          if (index === 1) await options.between?.()
        }
        if (!socket.destroyed) socket.write(chunk)
      }
    })
  })
}

/** The answer is the envelope with the request id, and its code is catalogued with the status answered. */
function assertEnvelope(response: RawResponse | undefined, status: number, code: string): Record<string, unknown> {
  assert.ok(response, 'an answer')
  assert.equal(response.status, status, response.body)
  assert.match(response.headers['x-service-request-id'] ?? '', UUID)
  assert.match(response.headers['content-type'] ?? '', /^application\/json/)
  const body = JSON.parse(response.body) as { code: string; message: string; details?: Record<string, unknown> }
  assert.equal(body.code, code, response.body)
  assert.equal(typeof body.message, 'string')
  assert.equal((ERROR_CATALOGUE as Record<string, { status: number }>)[code]?.status, status, `${code} is catalogued with ${status}`)
  return body
}

const request = (lines: string[], body = '') => `${lines.join('\r\n')}\r\n\r\n${body}`

for (const engine of ENGINES) {
  describe(`answers before routing, over a socket [${engine}]`, () => {
    let ctx: TestContext
    let port: number
    const logs: string[] = []
    before(async () => {
      const stream = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          logs.push(...chunk.toString().split('\n').filter(Boolean))
          callback()
        },
      })
      ctx = await startAppWith(engine, { BODY_LIMIT_BYTES: String(BODY_LIMIT), LOG_LEVEL: 'info' }, { logger: { ...(loggerOptions('info') as object), stream } })
      await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      port = (ctx.app.server.address() as AddressInfo).port
    })
    after(() => ctx.close())

    test('a header section too large is 431 headers_too_large with the limit', async () => {
      const [response] = await exchange(port, [request(['GET /health/live HTTP/1.1', 'Host: tessera.test', `X-Padding: ${'a'.repeat(20_000)}`])])
      const body = assertEnvelope(response, 431, 'headers_too_large')
      assert.deepEqual(body.details, { threshold: { unit: 'bytes', limit: '16384' } })
      assert.equal(response!.headers.connection, 'close')
    })

    test('a malformed request line or header field is 400 request_invalid', async () => {
      for (const raw of [
        request(['GET /health/live HTTP/9.9', 'Host: tessera.test']),
        request(['NOT A REQUEST LINE']),
        Buffer.from([0x00, 0x01, 0x02, 0x0d, 0x0a, 0x0d, 0x0a]),
        request(['GET /health/live HTTP/1.1', 'Host: tessera.test', 'Bad Header: x']),
        request(['GET /health/live HTTP/1.1', 'Host: tessera.test', 'X-Nul: a\u0000b']),
        request(['GET /health/live HTTP/1.1', 'Host: tessera.test', 'X-Folded: a', ' b']),
      ]) {
        assertEnvelope((await exchange(port, [raw]))[0], 400, 'request_invalid')
      }
    })

    test('broken body framing is 400 request_invalid', async () => {
      const post = ['POST /hosted/webhooks/api/sessions HTTP/1.1', 'Host: tessera.test', 'Content-Type: application/json']
      for (const raw of [
        request([...post, 'Content-Length: 5', 'Transfer-Encoding: chunked'], '0\r\n\r\n'),
        request([...post, 'Content-Length: 5', 'Content-Length: 6'], '{}'),
        request([...post, 'Content-Length: -1']),
        request([...post, 'Transfer-Encoding: chunked'], 'zz\r\n{}\r\n0\r\n\r\n'),
      ]) {
        assertEnvelope((await exchange(port, [raw]))[0], 400, 'request_invalid')
      }
    })

    test('a body over the limit is 413 content_too_large, announced or streamed', async () => {
      const post = ['POST /hosted/webhooks/api/sessions HTTP/1.1', 'Host: tessera.test', 'Content-Type: application/json']
      const big = JSON.stringify({ link: 'x'.repeat(BODY_LIMIT) })
      const announced = await exchange(port, [request([...post, `Content-Length: ${big.length}`], big)])
      assert.deepEqual(assertEnvelope(announced[0], 413, 'content_too_large').details, { threshold: { unit: 'bytes', limit: String(BODY_LIMIT) } })
      const chunked = await exchange(port, [request([...post, 'Transfer-Encoding: chunked'], `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`)])
      assertEnvelope(chunked[0], 413, 'content_too_large')
    })

    test('malformed JSON is 400 and another content type 415, in the envelope', async () => {
      const post = ['POST /hosted/webhooks/api/sessions HTTP/1.1', 'Host: tessera.test']
      assertEnvelope((await exchange(port, [request([...post, 'Content-Type: application/json', 'Content-Length: 7'], '{"link"')]))[0], 400, 'request_invalid')
      assertEnvelope((await exchange(port, [request([...post, 'Content-Type: text/plain', 'Content-Length: 2'], 'hi')]))[0], 415, 'content_type_unsupported')
    })

    test('a path that does not decode is 400; an overlong id is 404 like any malformed id', async () => {
      assertEnvelope((await exchange(port, [request(['GET /core/assets/%FF%FE HTTP/1.1', 'Host: tessera.test'])]))[0], 400, 'request_invalid')
      const token = await ctx.token()
      const user = await ctx.createUser(token)
      const acting = [`Authorization: Bearer ${token}`, `X-On-Behalf-Of: user ${user.id}`]
      const overlong = await exchange(port, [request([`GET /core/accounts/${'a'.repeat(5000)} HTTP/1.1`, 'Host: tessera.test', ...acting])])
      assert.deepEqual(assertEnvelope(overlong[0], 404, 'entity_not_found').details, { entity: 'account' })
      const unknown = await exchange(port, [request([`GET /core/accounts/${randomUUID()} HTTP/1.1`, 'Host: tessera.test', ...acting])])
      assert.deepEqual(assertEnvelope(unknown[0], 404, 'entity_not_found').details, { entity: 'account' })
    })

    test('an HTTP/1.1 request without Host is 400 naming the header; HTTP/1.0 needs none', async () => {
      const body = assertEnvelope((await exchange(port, [request(['GET /health/live HTTP/1.1'])]))[0], 400, 'request_invalid')
      assert.deepEqual(body.details, { context: 'headers', violations: [{ property: 'host', rule: 'required' }] })
      const old = await exchange(port, [request(['GET /health/live HTTP/1.0'])])
      assert.equal(old[0]?.status, 200)
    })

    test('an unknown expectation is ignored rather than answered with a bare 417', async () => {
      const [response] = await exchange(port, [request(['GET /health/live HTTP/1.1', 'Host: tessera.test', 'Expect: the-unexpected'])])
      assert.equal(response?.status, 200)
      assert.match(response!.headers['x-service-request-id'] ?? '', UUID)
    })

    test('a method no operation answers is 404 route_not_found in the envelope', async () => {
      for (const method of ['PROPFIND', 'TRACE', 'PATCH']) {
        assertEnvelope((await exchange(port, [request([`${method} /health/live HTTP/1.1`, 'Host: tessera.test'])]))[0], 404, 'route_not_found')
      }
    })

    test('a refused connection is logged with its request id, never with what the client sent', async () => {
      // The parser's error holds the raw bytes received, credentials included: its code is logged, not the error.
      const secret = `Bearer ${randomUUID()}`
      const [response] = await exchange(port, [request(['GET /health/live HTTP/1.1', 'Host: tessera.test', `Authorization: ${secret}`, 'Bad Header: x'])])
      assertEnvelope(response, 400, 'request_invalid')
      const requestId = response!.headers['x-service-request-id']!
      const line = logs.find((entry) => entry.includes(requestId))
      assert.ok(line, 'the refusal is logged with its request id')
      assert.equal((JSON.parse(line) as { code?: string }).code, 'HPE_INVALID_HEADER_TOKEN')
      assert.ok(!logs.some((entry) => entry.includes(secret.slice(7))), 'a credential leaked into the logs')
    })
  })

  describe(`answers while the server closes [${engine}]`, () => {
    test('a request arriving after closing began is 503 service_unavailable in the envelope; the one in progress finishes', async () => {
      const ctx = await startApp(engine)
      await ctx.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (ctx.app.server.address() as AddressInfo).port
      let closing: Promise<unknown> | undefined
      const body = JSON.stringify({ link: 'not-a-link' })
      const head = request(['POST /hosted/webhooks/api/sessions HTTP/1.1', 'Host: tessera.test', 'Content-Type: application/json', `Content-Length: ${body.length}`])
      // The first request is in progress (its body half sent) when closing begins; the second arrives after.
      const responses = await exchange(port, [head + body.slice(0, 5), body.slice(5) + request(['GET /health/live HTTP/1.1', 'Host: tessera.test'])], {
        count: 2,
        pauseMs: 300,
        between: async () => {
          closing = ctx.app.close()
          await new Promise((r) => setTimeout(r, 100))
        },
      })
      await closing
      assert.equal(responses.length, 2, JSON.stringify(responses))
      assert.ok(responses[0]!.status >= 400 && responses[0]!.status < 500, responses[0]!.body)
      assertEnvelope(responses[1], 503, 'service_unavailable')
      assert.equal(responses[1]!.headers['retry-after'], '1')
    })
  })
}
