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
  for (let i = 0; i < 2; i++) statements.nameFor('  WITH a AS (select 1 as n) select n from a')
  assert.ok(statements.nameFor('  WITH a AS (select 1 as n) select n from a'))
})

test('at most 256 texts are prepared; the rest run unnamed', () => {
  const statements = new PreparedStatements()
  for (let n = 0; n < 300; n++) for (let i = 0; i < 3; i++) statements.nameFor(`select ${n}`)
  assert.equal(statements.size, 256)
  assert.ok(statements.nameFor('select 0'), 'a prepared text keeps its name')
  for (let i = 0; i < 5; i++) assert.equal(statements.nameFor('select 299'), undefined)
})

test('a star, a row lock or a queue claim is never prepared', () => {
  const statements = new PreparedStatements()
  for (const text of ['select * from "users" where "id" = $1', 'select "users".* from "users"', 'update "jobs" set "a" = 1 returning *', 'select "id" from "jobs" where "status" = $1 for update skip locked', 'select "id" from "accounts" where "id" = $1 for no key update']) {
    for (let i = 0; i < 5; i++) assert.equal(statements.nameFor(text), undefined, text)
  }
})

test('a forgotten text runs unnamed from then on, and its slot is not given away', () => {
  const statements = new PreparedStatements()
  const text = 'select "id" from "users" where "id" = $1'
  for (let i = 0; i < 3; i++) statements.nameFor(text)
  assert.ok(statements.nameFor(text))
  statements.forget(text)
  for (let i = 0; i < 5; i++) assert.equal(statements.nameFor(text), undefined)
  assert.equal(statements.size, 1)
})
