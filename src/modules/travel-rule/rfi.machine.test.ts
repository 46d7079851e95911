import assert from 'node:assert/strict'
import { test } from 'node:test'
import { nextRequestStatus, type RequestForInformationEvent, type RequestForInformationStatus } from './rfi.machine.ts'

const STATUSES: RequestForInformationStatus[] = ['pending', 'ok', 'expired', 'failed']
const EVENTS: RequestForInformationEvent[] = ['accept', 'refuse', 'expire']

test('a request for information moves only from pending, and exactly as documented', () => {
  const seen: string[] = []
  for (const from of STATUSES) for (const event of EVENTS) {
    const to = nextRequestStatus(from, event)
    if (to !== null) seen.push(`${from} ${event} ${to}`)
  }
  assert.deepEqual(seen.sort(), ['pending accept ok', 'pending expire expired', 'pending refuse failed'])
})
