import assert from 'node:assert/strict'
import { after, before, beforeEach, test } from 'node:test'
import { PGlite } from '@electric-sql/pglite'
import { CompiledQuery, Kysely, PGliteDialect, sql } from 'kysely'
import { CommitHooks, foldable, isWrite } from './commit-hooks.ts'

interface Tables {
  items: { id: number; label: string }
  log: { id: number; note: string }
}

/** One hook with work pending while `pending` is set; what it saw settle, in order. */
const state = { pending: null as string | null, settled: [] as string[] }

const hooks = new CommitHooks()
// Beside a transaction's COMMIT the condition is `true` ('committed', or 'not committed' when it failed); carried by a
// single write, its own. The note 'refused' is inserted as NULL, which the table refuses: a hook statement that fails.
hooks.add(
  () => state.pending !== null,
  (offset, condition) => {
    const note = state.pending!
    state.pending = null
    return {
      sql: `insert into log (note) select $${offset + 1}::text where ${condition}`,
      parameters: [note === 'refused' ? null : note],
      after: (wrote) => {
        state.settled.push(condition === 'true' ? (wrote ? 'committed' : 'not committed') : `carried: ${wrote}`)
        if (!wrote) state.pending = note
      },
    }
  },
)

let pglite: PGlite
let db: Kysely<Tables>

before(async () => {
  pglite = await PGlite.create()
  db = new Kysely<Tables>({ dialect: hooks.wrap(new PGliteDialect({ pglite })) })
  await pglite.exec('create table items (id int primary key, label text not null); create table log (id serial primary key, note text not null)')
})

after(() => db.destroy())

beforeEach(async () => {
  state.pending = null
  state.settled = []
  await pglite.exec('truncate items; truncate log')
  await pglite.exec("insert into items values (1, 'one')")
})

const notes = async () => (await db.selectFrom('log').select('note').orderBy('id').execute()).map((row) => row.note)

test('which statements are writes, and which writes can carry the hooks themselves', () => {
  assert.ok(isWrite('insert into "a" values ($1)'))
  assert.ok(isWrite('with x as (update "a" set "b" = 1 returning "b") select * from x'))
  assert.ok(!isWrite('select 1'))
  assert.ok(foldable(db.updateTable('items').set({ label: 'x' }).where('id', '=', 1).returning('label').compile()))
  assert.ok(foldable(db.insertInto('items').values({ id: 9, label: 'x' }).onConflict((oc) => oc.doNothing()).returning('id').compile()))
  assert.ok(foldable(db.deleteFrom('items').where('id', '=', 1).returning('id').compile()))
  assert.ok(!foldable(db.updateTable('items').set({ label: 'x' }).compile()), 'no RETURNING: its rows cannot say whether it wrote')
  assert.ok(
    !foldable(db.with('x', (w) => w.selectFrom('items').select('id')).updateTable('items').set({ label: 'x' }).returning('id').compile()),
    'a WITH cannot nest a data-modifying CTE',
  )
  assert.ok(!foldable(CompiledQuery.raw('update items set label = \'returning\' where id = 1')), 'raw text is never taken for a write with RETURNING')
})

test('a single write with RETURNING carries the hook in its own statement, and returns what it would alone', async () => {
  state.pending = 'renamed'
  const result = await db.updateTable('items').set({ label: 'uno' }).where('id', '=', 1).returning(['id', 'label']).executeTakeFirst()
  assert.deepEqual(result, { id: 1, label: 'uno' })
  assert.deepEqual(await notes(), ['renamed'])
  assert.deepEqual(state.settled, ['carried: true'], 'by the statement, not a transaction of its own')
  assert.equal(state.pending, null)
})

test('a carried write that changes nothing writes no hook row, and the work stays pending for the next write', async () => {
  state.pending = 'renamed'
  const missed = await db.updateTable('items').set({ label: 'dos' }).where('id', '=', 2).returning('id').executeTakeFirst()
  assert.equal(missed, undefined)
  assert.deepEqual(await notes(), [])
  assert.deepEqual(state.settled, ['carried: false'])
  assert.equal(state.pending, 'renamed')

  const inserted = await db.insertInto('items').values({ id: 2, label: 'two' }).returning('id').execute()
  assert.equal(inserted.length, 1)
  assert.deepEqual(await notes(), ['renamed'])
  assert.deepEqual(state.settled, ['carried: false', 'carried: true'])
})

test('a carried write that fails leaves neither its change nor the hook row', async () => {
  state.pending = 'duplicate'
  await assert.rejects(db.insertInto('items').values({ id: 1, label: 'again' }).returning('id').execute(), /duplicate key/)
  assert.deepEqual(await notes(), [])
  assert.deepEqual(state.settled, ['carried: false'])
  assert.equal((await db.selectFrom('items').select('label').where('id', '=', 1).executeTakeFirstOrThrow()).label, 'one')
})

test('the count of a carried write is the rows it changed', async () => {
  await pglite.exec("insert into items values (2, 'two'), (3, 'three')")
  state.pending = 'bulk'
  const result = await db.updateTable('items').set({ label: sql`upper(label)` }).where('id', '>', 1).returning('id').execute()
  assert.equal(result.length, 2)
  assert.deepEqual(await notes(), ['bulk'])
})

test('a write without RETURNING, or inside a transaction, still has its hook row at COMMIT', async () => {
  state.pending = 'plain'
  const plain = await db.updateTable('items').set({ label: 'uno' }).where('id', '=', 1).executeTakeFirst()
  assert.equal(plain.numUpdatedRows, 1n)
  state.pending = 'transaction'
  await db.transaction().execute(async (tx) => {
    await tx.updateTable('items').set({ label: 'eins' }).where('id', '=', 1).returning('id').execute()
    assert.deepEqual(await tx.selectFrom('log').select('note').execute(), [{ note: 'plain' }], 'not before the commit')
  })
  assert.deepEqual(await notes(), ['plain', 'transaction'])
  assert.deepEqual(state.settled, ['committed', 'committed'])
})

test('a transaction whose hook statement fails commits nothing, and the work stays pending for the next write', async () => {
  state.pending = 'refused'
  await assert.rejects(
    db.transaction().execute(async (tx) => {
      await tx.updateTable('items').set({ label: 'eins' }).where('id', '=', 1).execute()
    }),
    /null value/,
  )
  assert.deepEqual(state.settled, ['not committed'])
  assert.equal(state.pending, 'refused', 'still to write')
  assert.equal((await db.selectFrom('items').select('label').where('id', '=', 1).executeTakeFirstOrThrow()).label, 'one', 'the write rolled back')
  assert.deepEqual(await notes(), [])
})

test('without pending work a write runs as it is', async () => {
  const result = await db.updateTable('items').set({ label: 'uno' }).where('id', '=', 1).returning('label').execute()
  assert.deepEqual(result, [{ label: 'uno' }])
  assert.deepEqual(await notes(), [])
})
