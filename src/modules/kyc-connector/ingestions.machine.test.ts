import assert from 'node:assert/strict'
import { test } from 'node:test'
import { maySettle, nextIngestionStatus } from './ingestions.machine.ts'

test('an ingestion is queued, then running, then finished, never backwards', () => {
  assert.equal(nextIngestionStatus('queued', 'start'), 'running')
  assert.equal(nextIngestionStatus('running', 'finish'), 'finished')
  assert.equal(nextIngestionStatus('queued', 'finish'), null)
  assert.equal(nextIngestionStatus('running', 'start'), null)
  assert.equal(nextIngestionStatus('finished', 'start'), null)
  assert.equal(nextIngestionStatus('finished', 'finish'), null)
})

test("a process's outcome is settled once, from processing", () => {
  assert.equal(maySettle('processing', 'completed'), true)
  assert.equal(maySettle('processing', 'failed'), true)
  assert.equal(maySettle('completed', 'failed'), false)
  assert.equal(maySettle('failed', 'completed'), false)
  assert.equal(maySettle(undefined, 'completed'), false)
  assert.equal(maySettle('processing', 'processing'), false)
})
