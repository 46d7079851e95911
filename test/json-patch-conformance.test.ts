/**
 * The RFC 6902 conformance corpus (../shared/conformance/json-patch) through PATCH /core/users/me/metadata.
 * Records whose document is a non-empty object run as they are; the others run inside `{"doc": …}` with every
 * pointer prefixed by `/doc` (metadata is always a non-empty object). A record with `error` must answer 422
 * and leave the stored metadata as it was.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { bearer, ENGINES, startApp, type TestContext } from './helpers.ts'

const CORPUS = path.resolve(import.meta.dirname, '../../shared/conformance/json-patch')
const URL = '/core/users/me/metadata'

interface CorpusRecord {
  comment?: string
  doc: unknown
  patch?: unknown[]
  expected?: unknown
  error?: string
  disabled?: boolean
}

const isNonEmptyObject = (value: unknown) => value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0

function prefixed(pointer: unknown): unknown {
  if (typeof pointer !== 'string') return pointer
  return pointer === '' || pointer.startsWith('/') ? `/doc${pointer}` : pointer
}

/** The record as metadata can hold it: as it is, or wrapped in `{"doc": …}`. */
function asMetadata(record: CorpusRecord & { patch: unknown[] }): { doc: unknown; patch: unknown[]; expected?: unknown } {
  const direct = isNonEmptyObject(record.doc) && ('error' in record || isNonEmptyObject(record.expected))
  if (direct) return record
  const patch = record.patch.map((operation) => {
    if (operation === null || typeof operation !== 'object') return operation
    const { path: target, from, ...rest } = operation as Record<string, unknown>
    return { ...rest, ...('path' in (operation as object) ? { path: prefixed(target) } : {}), ...('from' in (operation as object) ? { from: prefixed(from) } : {}) }
  })
  return { doc: { doc: record.doc }, patch, ...('expected' in record ? { expected: { doc: record.expected } } : {}) }
}

const corpora = ['tests.json', 'spec_tests.json'].map((file) => ({ file, path: path.join(CORPUS, file) }))

for (const engine of ENGINES) {
  describe(`RFC 6902 conformance corpus through PATCH [${engine}]`, { skip: !fs.existsSync(CORPUS) && `corpus not found at ${CORPUS}` }, () => {
    let ctx: TestContext
    let headers: Record<string, string>
    before(async () => {
      ctx = await startApp(engine)
      const token = await ctx.token()
      headers = bearer(token, (await ctx.createUser(token)).id)
    })
    after(() => ctx.close())

    for (const corpus of corpora) {
      test(corpus.file, async () => {
        const records = (JSON.parse(fs.readFileSync(corpus.path, 'utf8')) as CorpusRecord[]).filter(
          (record): record is CorpusRecord & { patch: unknown[] } => !record.disabled && Array.isArray(record.patch),
        )
        assert.ok(records.length > 10)
        const failures: string[] = []
        for (const [index, record] of records.entries()) {
          const label = `#${index} ${record.comment ?? record.error ?? ''}`.trim()
          const { doc, patch, expected } = asMetadata(record)
          const stored = await ctx.request({ method: 'PUT', url: URL, headers, payload: doc as Record<string, unknown> })
          assert.ok(stored.status === 200 || stored.status === 201, `${label}: could not store the document: ${stored.body}`)

          const response = await ctx.request({
            method: 'PATCH',
            url: URL,
            headers: { ...headers, 'content-type': 'application/json-patch+json' },
            payload: JSON.stringify(patch),
          })
          if ('error' in record) {
            const after = await ctx.request({ method: 'GET', url: URL, headers })
            if (response.status !== 422) failures.push(`${label}: expected 422, got ${response.status} ${response.body}`)
            else if (after.headers.etag !== stored.headers.etag) failures.push(`${label}: a failed patch changed the metadata`)
          } else if (response.status !== 200) {
            failures.push(`${label}: expected 200, got ${response.status} ${response.body}`)
          } else if ('expected' in record) {
            try {
              assert.deepStrictEqual(response.json<{ metadata: unknown }>().metadata, expected)
            } catch {
              failures.push(`${label}: got ${JSON.stringify(response.json().metadata)}, expected ${JSON.stringify(expected)}`)
            }
          }
        }
        assert.deepEqual(failures, [], `${failures.length} of ${records.length} records failed`)
      })
    }
  })
}
