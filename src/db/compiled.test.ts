import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { PGlite } from '@electric-sql/pglite'
import { Kysely, PGliteDialect, sql } from 'kysely'
import { compiledOnce } from './compiled.ts'
import type { Executor } from './schema.ts'

let pglite: PGlite
let db: Kysely<{ items: { id: number; label: string; tag: string } }>

before(async () => {
  pglite = await PGlite.create()
  db = new Kysely({ dialect: new PGliteDialect({ pglite }) })
  await pglite.exec("create table items (id int primary key, label text not null, tag text not null); insert into items values (1, 'one', 'a'), (2, 'two', 'b'), (3, 'three', 'a')")
})

after(() => db.destroy())

// The tests' own table, not the application's: the builder is typed for it.
const asItems = (executor: Executor) => executor as unknown as typeof db

test('a query compiled once runs with each call\'s values, its constants kept', async () => {
  let builds = 0
  const labelled = compiledOnce(['tags', 'above'], (executor, values) => {
    builds++
    return asItems(executor)
      .selectFrom('items')
      .select(['id', 'label'])
      .where(sql<boolean>`tag = any(${values.tags}::text[])`)
      .where('id', '>', values.above)
      .where('label', '<>', 'never')
      .orderBy('id')
  })
  const run = (tags: string[], above: number) => labelled(db as unknown as Executor, { tags, above }).then((result) => result.rows)
  assert.deepEqual(await run(['a'], 0), [{ id: 1, label: 'one' }, { id: 3, label: 'three' }])
  assert.deepEqual(await run(['a', 'b'], 1), [{ id: 2, label: 'two' }, { id: 3, label: 'three' }])
  assert.deepEqual(await run([], 0), [])
  assert.equal(builds, 1, 'built and compiled on the first call only')
})

test('an argument the query does not use as a whole parameter is refused when first compiled', async () => {
  const broken = compiledOnce(['id', 'unused'], (executor, values) => asItems(executor).selectFrom('items').select('id').where('id', '=', values.id))
  await assert.rejects(broken(db as unknown as Executor, { id: 1, unused: 2 }), /unused not used as whole parameters/)
})
