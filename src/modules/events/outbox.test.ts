import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { ENGINES, useApp } from '../../../test/helpers.ts'
import { eventsAbout, recordEvent } from './outbox.ts'

for (const engine of ENGINES) {
  describe(`outbox [${engine}]`, () => {
    const suite = useApp(engine)

    test('an event recorded in a rolled-back transaction does not exist; a committed one does, in order', async () => {
      const { db } = suite.ctx.database
      const organizationId = suite.ctx.client.organizationId
      const subject = { type: 'user', id: randomUUID() }
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await recordEvent(trx, { organizationId, type: 'core.test.changed', subject, data: { n: 0 } })
          throw new Error('the change failed')
        }),
        /the change failed/,
      )
      assert.deepEqual(await eventsAbout(db, organizationId, subject), [])

      await db.transaction().execute(async (trx) => {
        await recordEvent(trx, { organizationId, type: 'core.test.changed', subject, userId: subject.id, data: { n: 1 } })
        await recordEvent(trx, { organizationId, type: 'core.test.changed', subject, userId: subject.id, data: { n: 2 } })
      })
      const events = await eventsAbout(db, organizationId, subject)
      assert.deepEqual(events.map((e) => e.data), [{ n: 1 }, { n: 2 }])
      assert.ok(events.every((e) => e.dispatched_at === null && e.user_id === subject.id))
      assert.deepEqual(await eventsAbout(db, randomUUID(), subject), [], 'another organization sees none')
    })
  })
}
