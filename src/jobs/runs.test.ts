import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formRuns } from './runs.ts'

const jobs = (...types: string[]) => types.map((type, n) => ({ type, n }))
const numbers = (runs: { n: number }[][]) => runs.map((run) => run.map((job) => job.n))
const maxJobs = (limits: Record<string, number>) => (type: string) => limits[type] ?? 1

test('one-job types make a run per job, up to the free slots', () => {
  const { runs, leftOver } = formRuns(jobs('a', 'a', 'a'), 2, maxJobs({}))
  assert.deepEqual(numbers(runs), [[0], [1]])
  assert.deepEqual(leftOver.map((job) => job.n), [2])
})

test('jobs of a batch type share a run until it is full, then start the next', () => {
  const { runs, leftOver } = formRuns(jobs('d', 'd', 'd', 'd', 'd'), 2, maxJobs({ d: 2 }))
  assert.deepEqual(numbers(runs), [[0, 1], [2, 3]])
  assert.deepEqual(leftOver.map((job) => job.n), [4])
})

test('types mix in claim order, and a batch run keeps filling after the slots are taken', () => {
  const { runs, leftOver } = formRuns(jobs('d', 'a', 'd', 'a', 'd'), 2, maxJobs({ d: 3 }))
  assert.deepEqual(numbers(runs), [[0, 2, 4], [1]])
  assert.deepEqual(leftOver.map((job) => job.n), [3])
})

test('no slots, no runs', () => {
  const { runs, leftOver } = formRuns(jobs('d', 'a'), 0, maxJobs({ d: 5 }))
  assert.deepEqual(runs, [])
  assert.equal(leftOver.length, 2)
})
