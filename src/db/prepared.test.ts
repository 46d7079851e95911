import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PreparedStatements } from './prepared.ts'

test('a statement text is prepared from its third run on, under one stable name', () => {
  const statements = new PreparedStatements()
  const text = 'select "id" from "users" where "id" = $1'
  assert.equal(statements.nameFor(text), undefined)
  assert.equal(statements.nameFor(text), undefined)
  const name = statements.nameFor(text)
  assert.match(String(name), /^tessera_[\w-]{32}$/)
  assert.equal(statements.nameFor(text), name)
  assert.equal(new PreparedStatements().nameFor(text) ?? new PreparedStatements().nameFor(text), undefined, 'counted per process')
  const other = 'select "id" from "users" where "email" = $1'
  for (let i = 0; i < 3; i++) statements.nameFor(other)
  assert.notEqual(statements.nameFor(other), name, 'another text, another name')
})

test('transaction control and session commands are never prepared', () => {
  const statements = new PreparedStatements()
  for (const text of ['begin', 'commit', 'rollback', 'set local lock_timeout = 1000', 'savepoint a', 'LISTEN x']) {
    for (let i = 0; i < 5; i++) assert.equal(statements.nameFor(text), undefined, text)
  }
  for (let i = 0; i < 2; i++) statements.nameFor('  WITH a AS (select 1) select * from a')
  assert.ok(statements.nameFor('  WITH a AS (select 1) select * from a'))
})

test('at most 256 texts are prepared; the rest run unnamed', () => {
  const statements = new PreparedStatements()
  for (let n = 0; n < 300; n++) for (let i = 0; i < 3; i++) statements.nameFor(`select ${n}`)
  assert.equal(statements.size, 256)
  assert.ok(statements.nameFor('select 0'), 'a prepared text keeps its name')
  for (let i = 0; i < 5; i++) assert.equal(statements.nameFor('select 299'), undefined)
})
