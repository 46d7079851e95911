import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import net from 'node:net'
import { test, type TestContext } from 'node:test'
import type { Resolver } from '../../lib/outbound-address.ts'
import { WebhookSender, type WebhookSenderOptions } from './delivery-client.ts'

interface Received {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  body: string
}

/** A local endpoint on 127.0.0.1 that records what it receives and answers with `answer`; closed after the test. */
async function endpoint(t: TestContext, answer: (request: Received, response: http.ServerResponse) => void = (_, response) => response.end('ok')) {
  const received: Received[] = []
  const sockets: net.Socket[] = []
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const entry = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') }
      received.push(entry)
      answer(entry, response)
    })
  })
  server.on('connection', (socket: net.Socket) => sockets.push(socket))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  t.after(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { port, url: `http://127.0.0.1:${port}/hooks`, received, sockets, connections: () => sockets.length }
}

function sender(t: TestContext, options: Partial<WebhookSenderOptions> = {}): WebhookSender {
  const created = new WebhookSender({ allowPrivateAddresses: true, timeoutMs: 1000, ...options })
  t.after(() => created.close())
  return created
}

/** A resolver answering from a table; a name not in it is ENOTFOUND. */
function dns(table: Record<string, string[]>): Resolver {
  return async (host) => {
    const found = table[host]
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return found.map((address) => ({ address, family: net.isIP(address) }))
  }
}

/** A port nothing listens on (it was just free). */
async function closedPort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const message = { url: '', headers: { 'webhook-id': 'msg_1', 'webhook-signature': 'v1,abc' }, body: JSON.stringify({ type: 'user.created', data: { id: 'é€😀' } }) }

test('a 2xx answer is ok with its excerpt, and the endpoint receives the headers and the body intact', async (t) => {
  const server = await endpoint(t, (_, response) => response.writeHead(202).end('{"received":true}'))
  const outcome = await sender(t).send({ ...message, url: `${server.url}?tenant=1#fragment` })
  assert.deepEqual({ ...outcome, durationMs: 0 }, { ok: true, status: 202, durationMs: 0, excerpt: '{"received":true}', error: null, message: null })
  assert.ok(Number.isInteger(outcome.durationMs) && outcome.durationMs >= 0)
  const [request] = server.received
  assert.equal(server.received.length, 1)
  assert.equal(request?.method, 'POST')
  assert.equal(request?.url, '/hooks?tenant=1')
  assert.equal(request?.body, message.body)
  assert.equal(request?.headers['content-type'], 'application/json')
  assert.equal(request?.headers['user-agent'], 'Tessera-Webhooks/1')
  assert.equal(request?.headers['content-length'], String(Buffer.byteLength(message.body)))
  assert.equal(request?.headers['webhook-id'], 'msg_1')
  assert.equal(request?.headers['webhook-signature'], 'v1,abc')
  assert.equal(request?.headers.host, `127.0.0.1:${server.port}`)
})

test('a 500 is an http-status failure whose excerpt stops at 1024 bytes on a character boundary', async (t) => {
  const server = await endpoint(t, (_, response) => response.writeHead(500).end('€'.repeat(400))) // 3 bytes each: 1024 cuts the 342nd
  const outcome = await sender(t).send({ ...message, url: server.url })
  assert.equal(outcome.ok, false)
  assert.equal(outcome.status, 500)
  assert.equal(outcome.error, 'http-status')
  assert.equal(outcome.message, 'answered 500')
  assert.equal(outcome.excerpt, '€'.repeat(341))
  const short = await sender(t, { excerptBytes: 5 }).send({ ...message, url: server.url })
  assert.equal(short.excerpt, '€')
})

test('a redirect is reported with its status and never followed, even where private addresses are allowed', async (t) => {
  const target = await endpoint(t)
  const locations = [target.url, 'http://169.254.169.254/latest/meta-data/']
  const server = await endpoint(t, (request, response) => response.writeHead(request.url === '/hooks' ? 302 : 307, { location: locations.shift() }).end('moved'))
  const client = sender(t)
  for (const path of ['/hooks', '/metadata']) {
    const outcome = await client.send({ ...message, url: `http://127.0.0.1:${server.port}${path}` })
    assert.deepEqual([outcome.ok, outcome.error, outcome.excerpt], [false, 'redirect', 'moved'])
    assert.equal(outcome.status, path === '/hooks' ? 302 : 307)
    assert.doesNotMatch(outcome.message ?? '', /169\.254|127\.0\.0\.1/)
  }
  assert.equal(server.received.length, 2)
  assert.equal(target.received.length, 0)
  assert.equal(target.connections(), 0)
})

test('an endpoint that never answers times out within the bound', async (t) => {
  const server = await endpoint(t, () => {})
  const outcome = await sender(t, { timeoutMs: 200 }).send({ ...message, url: server.url })
  assert.deepEqual([outcome.ok, outcome.status, outcome.error, outcome.message], [false, null, 'timeout', 'no complete answer within 200 ms'])
  // Never before the bound; the upper limit leaves room for a loaded machine.
  assert.ok(outcome.durationMs >= 195 && outcome.durationMs < 3000, `${outcome.durationMs} ms`)
})

test('an answer whose body never ends times out with its status', async (t) => {
  const server = await endpoint(t, (_, response) => response.writeHead(200, { 'content-length': '100' }).write('part'))
  const outcome = await sender(t, { timeoutMs: 200 }).send({ ...message, url: server.url })
  assert.deepEqual([outcome.ok, outcome.status, outcome.error, outcome.excerpt], [false, 200, 'timeout', 'part'])
})

test('an aborted signal ends the attempt as a timeout with message "aborted"', async (t) => {
  const controller = new AbortController()
  // Aborted once the endpoint has the request (and never answers it): the attempt is in flight, whatever the load.
  const server = await endpoint(t, () => controller.abort())
  const client = sender(t, { timeoutMs: 5000 })
  const outcome = await client.send({ ...message, url: server.url, signal: controller.signal })
  assert.deepEqual([outcome.ok, outcome.status, outcome.error, outcome.message], [false, null, 'timeout', 'aborted'])
  assert.ok(outcome.durationMs < 4000, `${outcome.durationMs} ms`)
  const before = await client.send({ ...message, url: server.url, signal: AbortSignal.abort() })
  assert.deepEqual([before.error, before.message], ['timeout', 'aborted'])
  assert.equal(server.received.length, 1)
})

test('an answer of several MB is cut at maxResponseBytes, promptly, and its socket is not reused', async (t) => {
  const server = await endpoint(t, (request, response) => response.writeHead(200).end(request.url === '/hooks' ? Buffer.alloc(8 * 1024 * 1024, 'a') : 'small'))
  const client = sender(t, { maxResponseBytes: 16 * 1024 })
  const started = performance.now()
  const outcome = await client.send({ ...message, url: server.url })
  assert.ok(performance.now() - started < 3000, "the rest of the answer is not waited for")
  assert.deepEqual([outcome.ok, outcome.status, outcome.error, outcome.excerpt], [true, 200, null, 'a'.repeat(1024)])
  const [socket] = server.sockets
  assert.ok(socket)
  // Its close is seen by the server (a reset, hence no once(): it rejects on 'error').
  await new Promise<void>((resolve, reject) => {
    if (socket.destroyed) return resolve()
    const timer = setTimeout(() => reject(new Error('the socket of the cut answer stayed open')), 500)
    socket.once('close', () => {
      clearTimeout(timer)
      resolve()
    })
  })
  const next = await client.send({ ...message, url: `http://127.0.0.1:${server.port}/small` })
  assert.deepEqual([next.ok, next.excerpt], [true, 'small'])
  assert.equal(server.connections(), 2)
})

test('consecutive deliveries to one endpoint reuse one keep-alive socket, error answers included', async (t) => {
  const server = await endpoint(t, (request, response) => response.writeHead(request.url === '/hooks' ? 200 : 503).end('x'.repeat(5000)))
  const client = sender(t)
  for (const path of ['/hooks', '/busy', '/hooks']) await client.send({ ...message, url: `http://127.0.0.1:${server.port}${path}` })
  assert.equal(server.received.length, 3)
  assert.equal(server.connections(), 1)
})

test('a closed port is a connection failure', async (t) => {
  const port = await closedPort()
  const outcome = await sender(t).send({ ...message, url: `http://127.0.0.1:${port}/` })
  assert.deepEqual([outcome.ok, outcome.status, outcome.error], [false, null, 'connection-failed'])
  assert.match(outcome.message ?? '', /ECONNREFUSED/)
})

test('a name that does not resolve is a DNS failure, whatever the deployment', async (t) => {
  const again: Resolver = async () => {
    throw Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' })
  }
  for (const [options, expected] of [
    [{ resolver: dns({}) }, 'nowhere.example.com did not resolve (ENOTFOUND)'],
    [{ resolver: dns({}), allowPrivateAddresses: false }, 'nowhere.example.com did not resolve (ENOTFOUND)'],
    [{ resolver: again }, 'nowhere.example.com did not resolve (EAI_AGAIN)'],
    [{ resolver: dns({ 'nowhere.example.com': [] }), allowPrivateAddresses: false }, 'nowhere.example.com did not resolve'],
  ] as const) {
    const outcome = await sender(t, options).send({ ...message, url: 'https://nowhere.example.com/hooks' })
    assert.deepEqual([outcome.ok, outcome.status, outcome.error, outcome.message], [false, null, 'dns-failed', expected])
  }
})

test('an https URL on a port that does not speak TLS is a TLS failure', async (t) => {
  const server = await endpoint(t)
  const outcome = await sender(t).send({ ...message, url: `https://127.0.0.1:${server.port}/hooks` })
  assert.deepEqual([outcome.ok, outcome.status, outcome.error], [false, null, 'tls-failed'])
  assert.equal(server.received.length, 0)
})

test('without private addresses, loopback, private and metadata addresses are refused in every spelling, before connecting', async (t) => {
  const server = await endpoint(t)
  const client = sender(t, { allowPrivateAddresses: false, resolver: dns({}) })
  for (const url of [
    server.url,
    `http://[::1]:${server.port}/`,
    'http://[::ffff:7f00:1]/',
    `http://[::ffff:127.0.0.1]:${server.port}/`,
    `http://0x7f.1:${server.port}/`,
    `http://2130706433:${server.port}/`,
    'http://10.1.2.3/',
    'https://192.168.0.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fd00::1]/',
    'http://0.0.0.0/',
  ]) {
    const outcome = await client.send({ ...message, url })
    assert.deepEqual([outcome.ok, outcome.status, outcome.error, outcome.excerpt], [false, null, 'address-refused', ''], url)
    assert.match(outcome.message ?? '', /not public/, url)
  }
  assert.equal(server.connections(), 0)
})

test('without private addresses, a name resolving to a private address, even beside a public one, is refused before connecting', async (t) => {
  const server = await endpoint(t)
  const resolver = dns({
    'internal.example.com': ['10.0.0.5'],
    'mixed.example.com': ['93.184.215.14', '10.0.0.5'],
    'mixed-loopback.example.com': ['93.184.215.14', '127.0.0.1'],
    'hooks.example.com': ['127.0.0.1'],
    'six.example.com': ['::1'],
    'localhost': ['127.0.0.1', '::1'],
  })
  for (const autoSelectFamily of [true, false]) {
    // Node calls the agent's lookup with `all: true` under autoSelectFamily and without it otherwise: both are checked.
    net.setDefaultAutoSelectFamily(autoSelectFamily)
    try {
      const client = sender(t, { allowPrivateAddresses: false, resolver })
      for (const host of ['internal.example.com', 'mixed.example.com', 'mixed-loopback.example.com', 'hooks.example.com', 'six.example.com', 'localhost']) {
        const outcome = await client.send({ ...message, url: `http://${host}:${server.port}/hooks` })
        assert.deepEqual([outcome.ok, outcome.status, outcome.error], [false, null, 'address-refused'], host)
        assert.match(outcome.message ?? '', new RegExp(`^${host} resolves to an address that is not public`), host)
      }
    } finally {
      net.setDefaultAutoSelectFamily(true)
    }
  }
  assert.equal(server.connections(), 0)
})

test('with private addresses allowed, loopback is reached, by address or by name, and the Host header keeps the name', async (t) => {
  const server = await endpoint(t)
  for (const autoSelectFamily of [true, false]) {
    net.setDefaultAutoSelectFamily(autoSelectFamily)
    try {
      const client = sender(t, { resolver: dns({ 'hooks.sandbox.test': ['127.0.0.1'] }) })
      for (const url of [server.url, `http://hooks.sandbox.test:${server.port}/hooks`]) {
        const outcome = await client.send({ ...message, url })
        assert.deepEqual([outcome.ok, outcome.status, outcome.error], [true, 200, null], url)
      }
    } finally {
      net.setDefaultAutoSelectFamily(true)
    }
  }
  assert.deepEqual(
    server.received.map((request) => request.headers.host),
    [`127.0.0.1:${server.port}`, `hooks.sandbox.test:${server.port}`, `127.0.0.1:${server.port}`, `hooks.sandbox.test:${server.port}`],
  )
})

test('URLs that are not http(s), that carry credentials, or that do not parse are invalid and nothing is sent', async (t) => {
  const server = await endpoint(t)
  const client = sender(t)
  for (const url of [
    `ftp://127.0.0.1:${server.port}/`,
    'file:///etc/passwd',
    'javascript:alert(1)',
    `http://user:pw@127.0.0.1:${server.port}/`,
    `http://user@127.0.0.1:${server.port}/`,
    `https://:secret@127.0.0.1:${server.port}/`,
    'not a url',
    'http://',
  ]) {
    const outcome = await client.send({ ...message, url })
    assert.deepEqual([outcome.ok, outcome.status, outcome.error], [false, null, 'url-invalid'], url)
    assert.doesNotMatch(outcome.message ?? '', /pw|secret|passwd/, url)
  }
  assert.equal(server.connections(), 0)
})
