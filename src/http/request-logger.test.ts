import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { test } from 'node:test'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { loggerOptions } from '../app.ts'
import { lazyChildLoggerFactory } from './request-logger.ts'

function capture(level: 'debug' | 'info' | 'warn') {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString())
      callback()
    },
  })
  return { logger: pino(loggerOptions(level), stream), lines }
}

const childOf = (logger: FastifyBaseLogger) =>
  lazyChildLoggerFactory.call(null as unknown as FastifyInstance, logger, { requestId: 'req-1' }, {}, undefined as never) as FastifyBaseLogger

// Everything the redaction of loggerOptions covers, at the depths it covers it.
const SECRETS = {
  req: { headers: { authorization: 'Bearer secret-token-1', cookie: 'session=secret-cookie-2' } },
  body: { client_secret: 'secret-3', clientSecret: 'secret-4', access_token: 'secret-5', password: 'secret-6', apiKey: 'secret-7', sharedSecretKey: 'secret-8' },
  config: { integrations: [{ apiKey: 'secret-9', sharedSecretKey: 'secret-10' }] },
}
const withoutTime = (line: string) => line.replace(/"time":\d+,/, '')

test('a request that writes nothing at an enabled level makes no child logger', () => {
  const { logger } = capture('warn')
  let made = 0
  const child = logger.child.bind(logger)
  const counting = Object.assign(Object.create(logger) as typeof logger, {
    child: (...args: Parameters<typeof child>) => {
      made++
      return child(...args)
    },
  })
  const requestLogger = childOf(counting)
  requestLogger.info({ req: { url: '/core/users/me' } }, 'incoming request')
  requestLogger.debug('detail')
  assert.equal(made, 0)
  assert.equal(requestLogger.level, 'warn')
  requestLogger.warn('something to say')
  requestLogger.error('and more')
  assert.equal(made, 1, 'made once, when first needed')
})

test('at debug, lines are written exactly as the eager child writes them: bound to the request, every secret redacted', () => {
  const lazy = capture('debug')
  const eager = capture('debug')
  const lazyChild = childOf(lazy.logger)
  const eagerChild = eager.logger.child({ requestId: 'req-1' }, {})
  for (const [logger, message] of [[lazyChild, 'lazy'], [eagerChild, 'lazy']] as const) {
    logger.debug(SECRETS, message)
    logger.info({ form: SECRETS.body }, message)
    logger.child({ flow: 'x' }).warn(SECRETS.config, message)
  }
  assert.equal(lazy.lines.length, 3)
  assert.deepEqual(lazy.lines.map(withoutTime), eager.lines.map(withoutTime))
  const written = lazy.lines.join('')
  assert.match(written, /"requestId":"req-1"/)
  assert.match(written, /\[redacted\]/)
  for (const secret of ['secret-token-1', 'secret-cookie-2', ...Array.from({ length: 8 }, (_, index) => `secret-${index + 3}`)]) {
    assert.ok(!written.includes(`"${secret}"`) && !written.includes(secret), `${secret} was written`)
  }
})

test('a route with a level of its own gets its child at once, at that level', () => {
  const { logger, lines } = capture('warn')
  const child = lazyChildLoggerFactory.call(null as unknown as FastifyInstance, logger, { requestId: 'req-2' }, { level: 'debug' }, undefined as never) as FastifyBaseLogger
  child.debug('written at the route level')
  assert.equal(lines.length, 1)
})

test('through Fastify: request logs keep the request id; requests at a quieter level write nothing', async () => {
  for (const level of ['info', 'warn'] as const) {
    const { logger, lines } = capture(level)
    const app = Fastify({ loggerInstance: logger, childLoggerFactory: lazyChildLoggerFactory, genReqId: () => 'req-3' })
    app.get('/', async (request) => {
      request.log.debug({ clientSecret: 'secret-11' }, 'debug line')
      return { ok: true }
    })
    const response = await app.inject({ method: 'GET', url: '/', headers: { authorization: 'Bearer secret-12' } })
    assert.equal(response.statusCode, 200)
    await app.close()
    const written = lines.join('')
    if (level === 'info') {
      assert.match(written, /"reqId":"req-3"[^\n]*incoming request/)
      assert.match(written, /request completed/)
    } else {
      assert.equal(written, '')
    }
    assert.ok(!written.includes('secret-11') && !written.includes('secret-12'))
  }
})
