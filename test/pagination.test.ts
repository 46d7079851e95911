import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { fetchPage } from '../src/db/paging.ts'
import { pageWindow, paginationLinks } from '../src/http/pagination.ts'
import { ENGINES, useApp } from './helpers.ts'

const BASE = 'https://api.tessera.test'

describe('pagination links', () => {
  test('are absolute, keep every filter of the request, and carry page, perPage and the anchor', () => {
    const links = paginationLinks({
      baseUrl: BASE,
      requestUrl: '/core/accounts?asset=BTC,ETH&status=active&page=2&perPage=5',
      window: pageWindow({ page: 2, perPage: 5 }),
      anchor: '0190a8c1-0000-7000-8000-000000000009',
      hasNext: true,
    })
    assert.deepEqual(links, {
      first: `${BASE}/core/accounts?asset=BTC%2CETH&status=active&page=1&perPage=5&until=0190a8c1-0000-7000-8000-000000000009`,
      prev: `${BASE}/core/accounts?asset=BTC%2CETH&status=active&page=1&perPage=5&until=0190a8c1-0000-7000-8000-000000000009`,
      next: `${BASE}/core/accounts?asset=BTC%2CETH&status=active&page=3&perPage=5&until=0190a8c1-0000-7000-8000-000000000009`,
    })
    for (const link of Object.values(links)) assert.deepEqual(new URL(link).searchParams.get('asset'), 'BTC,ETH')
  })

  test('the first page has no prev, the last no next; defaults are page 1 of 10', () => {
    const window = pageWindow({})
    assert.deepEqual(window, { page: 1, perPage: 10, offset: 0, until: undefined })
    const links = paginationLinks({ baseUrl: BASE, requestUrl: '/core/transactions?type=deposit&type=withdrawal', window, anchor: undefined, hasNext: false })
    assert.deepEqual(links, { first: `${BASE}/core/transactions?type=deposit&type=withdrawal&page=1&perPage=10` })
  })
})

for (const engine of ENGINES) {
  describe(`paging a list [${engine}]`, () => {
    const suite = useApp(engine)

    const usersQuery = () => suite.ctx.database.db.selectFrom('users').select(['id', 'email']).where('organization_id', '=', suite.ctx.client.organizationId)

    test('pages are newest first and do not shift when items are created while walking them', async () => {
      const created: string[] = []
      for (let i = 0; i < 25; i++) created.push((await suite.ctx.createUser(suite.token)).id)
      const newestFirst = [...created].reverse()

      const first = await fetchPage(usersQuery(), 'id', pageWindow({ perPage: 10 }))
      assert.deepEqual(first.items.map((u) => u.id), newestFirst.slice(0, 10))
      assert.equal(first.hasNext, true)
      assert.equal(first.anchor, newestFirst[0])

      // New users arrive while the client reads on: they must not push earlier ones onto the next page.
      for (let i = 0; i < 4; i++) await suite.ctx.createUser(suite.token)

      const seen = [...first.items.map((u) => u.id)]
      let page = 2
      for (;;) {
        const next = await fetchPage(usersQuery(), 'id', pageWindow({ page, perPage: 10, until: first.anchor }))
        seen.push(...next.items.map((u) => u.id))
        assert.equal(next.anchor, first.anchor)
        if (!next.hasNext) break
        page++
      }
      assert.deepEqual(seen, newestFirst, 'every item exactly once, in order')

      const jumped = await fetchPage(usersQuery(), 'id', pageWindow({ page: 2, perPage: 10 }))
      assert.equal(jumped.items.length, 10)
      assert.ok(jumped.anchor !== undefined && jumped.anchor > first.anchor!, 'a page reached directly anchors at the newest item now')
    })

    test('an empty list is one empty page', async () => {
      const other = await suite.ctx.newClient()
      const page = await fetchPage(suite.ctx.database.db.selectFrom('users').select(['id']).where('organization_id', '=', other.organizationId), 'id', pageWindow({}))
      assert.deepEqual(page, { items: [], hasNext: false, anchor: undefined })
    })
  })
}
