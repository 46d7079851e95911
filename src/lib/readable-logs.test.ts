import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pino } from 'pino'
import { loggerOptions } from '../app.ts'
import { readableLine, readableLogStream } from './readable-logs.ts'

test('a pino line reads as time, level, message and fields', () => {
  const line = JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 31, 12, 34, 56, 789), pid: 1, hostname: 'h', msg: 'Server listening', port: 3000, url: 'http://x/y' })
  assert.equal(readableLine(line, false), '12:34:56.789 INFO  Server listening port=3000 url=http://x/y')
  assert.ok(readableLine(line, true).includes('\x1b[32mINFO '))
})

test('strings that need quoting are quoted; errors show their stack indented', () => {
  const line = JSON.stringify({ level: 50, time: 0, msg: 'failed', reason: 'two words', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' } })
  assert.equal(readableLine(line, false), '00:00:00.000 ERROR failed reason="two words"\n    Error: boom\n        at x')
})

test("Fastify's request lines are shortened to method, path, status and time", () => {
  const incoming = JSON.stringify({ level: 30, time: 0, msg: 'incoming request', requestId: 'r1', req: { method: 'GET', url: '/core/users/me', host: 'h', remoteAddress: '127.0.0.1' } })
  assert.equal(readableLine(incoming, false), '00:00:00.000 INFO  incoming request requestId=r1 GET /core/users/me')
  const completed = JSON.stringify({ level: 30, time: 0, msg: 'request completed', requestId: 'r1', res: { statusCode: 200 }, responseTime: 4.5821 })
  assert.equal(readableLine(completed, false), '00:00:00.000 INFO  request completed requestId=r1 status=200 4.6ms')
})

test('what is not a JSON object passes through unchanged', () => {
  assert.equal(readableLine('plain text', false), 'plain text')
  assert.equal(readableLine('[1,2]', false), '[1,2]')
})

test('readable logs are redacted exactly as the JSON ones: they format what pino already wrote', async () => {
  let written = ''
  const out = { write: (text: string) => ((written += text), true), isTTY: true } as unknown as NodeJS.WritableStream
  const logger = pino(loggerOptions('info'), readableLogStream(out))
  logger.info({ req: { headers: { authorization: 'Bearer secret-token' } }, body: { clientSecret: 'hunter2' } }, 'request')
  logger.flush()
  await new Promise((resolve) => setImmediate(resolve))
  assert.match(written, /request/)
  assert.ok(!written.includes('secret-token') && !written.includes('hunter2'), written)
  assert.match(written, /\[redacted\]/)
})
