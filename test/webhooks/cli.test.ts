import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildApp } from '../../src/app.ts'
import { migrateToLatest, openDatabase } from '../../src/db/database.ts'
import { loadOrCreateSecrets } from '../../src/lib/data-dir.ts'
import { ENGINES, localContext, testConfig, basicAuth, type TestContext } from '../helpers.ts'
import { cli, deployment } from '../processes.ts'
import { createEndpoint, deliverUntil, messagesOf, openPortal } from './portal.ts'
import { Receiver } from './receiver.ts'

for (const engine of ENGINES) {
  describe(`tessera webhooks [${engine}]`, () => {
    const cleanups: (() => Promise<void>)[] = []
    after(async () => {
      for (const cleanup of cleanups) await cleanup()
    })

    /** The deployment's app, in this process, on its data directory and keys (closed before the CLI runs). */
    async function open(env: Record<string, string>, dataDir: string): Promise<{ ctx: TestContext; close: () => Promise<void> }> {
      const config = testConfig({ ...env, DATA_DIR: dataDir, WEBHOOK_RETRY_SCHEDULE: '10ms' })
      const database = await openDatabase(config)
      await migrateToLatest(database)
      const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(dataDir, config) })
      return { ctx: localContext(built.app, built.services, database), close: () => built.app.close() }
    }

    test('lists messages and attempts, replays and resends, and refuses bad input', async () => {
      const { env, dataDir, cleanup } = await deployment(engine, 'webhooks_cli')
      cleanups.push(cleanup)
      const receiver = new Receiver()
      cleanups.push(() => receiver.stop())
      const url = await receiver.start()

      let app = await open(env, dataDir)
      const client = await app.ctx.services.clients.create({ name: 'CLI', scopes: '*' })
      const tokenOf = async (ctx: TestContext) =>
        (await ctx.request({ method: 'POST', url: '/core/oauth2/token', headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' })).json<{ access_token: string }>().access_token
      const token = await tokenOf(app.ctx)
      const portal = await openPortal(app.ctx, token)
      const endpoint = await createEndpoint(app.ctx, portal, { url, eventTypes: ['core.user.created'] })
      const since = new Date(Date.now() - 1000).toISOString()
      const user = await app.ctx.createUser(token, { type: 'individual', email: 'cli@example.com', termsOfService: 'general-gb-fca', primaryCitizenship: 'GB', address: { country: 'GB', subdivision: 'GB-MAN' } })
      await deliverUntil(app.ctx, () => receiver.received.length === 1)
      await app.close()

      const listed = await cli(['webhooks', 'list', '--endpoint', endpoint.id, '--status', 'delivered'], env)
      assert.equal(listed.code, 0, listed.stderr)
      const messages = JSON.parse(listed.stdout) as { id: string; endpointId: string; status: string; eventType: string; attempts: number }[]
      assert.deepEqual(messages.map((m) => [m.endpointId, m.status, m.eventType, m.attempts]), [[endpoint.id, 'delivered', 'core.user.created', 1]])

      const attempts = await cli(['webhooks', 'attempts', '--endpoint', endpoint.id], env)
      assert.equal(attempts.code, 0, attempts.stderr)
      assert.deepEqual((JSON.parse(attempts.stdout) as { succeeded: boolean; responseStatus: number }[]).map((a) => [a.succeeded, a.responseStatus]), [[true, 200]])

      const replayed = await cli(['webhooks', 'replay', '--endpoint', endpoint.id, '--since', since], env)
      assert.equal(replayed.code, 0, replayed.stderr)
      assert.equal((JSON.parse(replayed.stdout) as { queued: number }).queued, 1)
      const resent = await cli(['webhooks', 'resend', '--endpoint', endpoint.id, '--message', messages[0]!.id], env)
      assert.equal(resent.code, 0, resent.stderr)
      assert.equal((JSON.parse(resent.stdout) as { origin: string }).origin, 'resend')

      app = await open(env, dataDir)
      const portalAgain = await openPortal(app.ctx, await tokenOf(app.ctx))
      await deliverUntil(app.ctx, async () => (await messagesOf(app.ctx, portalAgain, endpoint.id, '?status=delivered')).length === 3)
      await app.close()
      assert.equal(receiver.received.length, 3)
      assert.ok(receiver.events().every((event) => (event.data.user as { id: string }).id === user.id))

      for (const [args, pattern] of [
        [['webhooks', 'replay', '--endpoint', endpoint.id], /--since is required/],
        [['webhooks', 'replay', '--endpoint', endpoint.id, '--since', 'last week'], /--since must be a time/],
        [['webhooks', 'replay', '--endpoint', '0190e0a3-1c3e-7000-8000-000000000000', '--since', since], /cannot be found/],
        [['webhooks', 'list', '--status', 'lost'], /--status must be one of/],
        [['webhooks', 'list'], /--endpoint is required/],
        [['webhooks', 'list', '--limit', 'many'], /--limit must be an integer/],
        [['webhooks', 'resend', '--endpoint', 'nope', '--message', messages[0]!.id], /--endpoint must be a UUID/],
        [['webhooks', 'purge'], /Unknown webhooks command/],
      ] as const) {
        const run = await cli([...args], env)
        assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`)
        assert.match(run.stderr, pattern)
      }
    })
  })
}
