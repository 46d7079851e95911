/**
 * The printable statements in Chromium: after months of sandbox history, the transactions and portfolio statements
 * of a past month render from Tessera alone (nothing else loaded, no script, no CSP violation), show the month's
 * figures, and print to A4 PDF. `UPDATE_SCREENSHOTS=1` refreshes the picture in docs/portfolio.md.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser } from 'playwright-core'
import { bearer, startApp, type TestContext } from '../helpers.ts'
import { verifiedUser } from '../money.ts'
import { launchChromium, PageWatch, screenshot } from './harness.ts'

describe('printable statements in Chromium', { timeout: 120_000 }, () => {
  let ctx: TestContext
  let browser: Browser
  let baseUrl: string
  let token: string
  let userId: string
  let query: string
  const watch = new PageWatch()

  before(async () => {
    const [context, launched] = await Promise.all([startApp('pglite'), launchChromium()])
    ctx = context
    browser = launched
    await ctx.app.listen({ host: '127.0.0.1', port: 0 })
    const address = ctx.app.server.address()
    assert.ok(address && typeof address === 'object')
    baseUrl = `http://127.0.0.1:${address.port}`
    token = await ctx.token()
    userId = await verifiedUser(ctx, token)
    const generated = await ctx.request({ method: 'POST', url: '/core/portfolio/test-helpers/history', headers: bearer(token, userId), payload: { months: 3, seed: 7 } })
    assert.equal(generated.status, 201, generated.body)
    // The last whole month of the generated history.
    const now = new Date()
    const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1))
    query = `period=one-month&year=${month.getUTCFullYear()}&month=${month.getUTCMonth() + 1}&denomination=USD`
  })

  after(async () => {
    await browser?.close()
    await ctx?.close()
  })

  async function open(kind: 'portfolio' | 'transactions') {
    const { context, page } = await watch.newPage(browser, { width: 900, height: 1200 })
    await context.setExtraHTTPHeaders({ ...bearer(token, userId), accept: 'text/html' })
    const response = await page.goto(`${baseUrl}/core/statements/${kind}?${query}`, { waitUntil: 'load' })
    assert.equal(response?.status(), 200)
    assert.match(response?.headers()['content-type'] ?? '', /^text\/html/)
    assert.match(response?.headers()['content-security-policy'] ?? '', /^default-src 'none'/)
    return { context, page }
  }

  test('the transactions statement: every transaction of the month, styled, nothing loaded from elsewhere', async () => {
    const { context, page } = await open('transactions')
    const json = await ctx.request({ method: 'GET', url: `/core/statements/transactions?${query}&perPage=100`, headers: bearer(token, userId) })
    const count = json.json<{ statement: { transactions: unknown[] } }>().statement.transactions.length
    assert.ok(count > 0, 'the month has transactions')
    assert.equal(await page.locator('tbody tr').count(), count)
    assert.match(await page.locator('h1').innerText(), /^Transactions statement — /)
    // The inline style applied (allowed by its hash): the header row is uppercase.
    assert.equal(await page.locator('th').first().evaluate((th) => getComputedStyle(th).textTransform), 'uppercase')
    await screenshot(page, 'statement-transactions', 'page')
    const pdf = await page.pdf({ format: 'A4', printBackground: true })
    assert.equal(pdf.subarray(0, 5).toString(), '%PDF-')
    await context.close()
    watch.assertClean()
  })

  test('the portfolio statement: holdings at the end of the month with their values and a total', async () => {
    const { context, page } = await open('portfolio')
    assert.match(await page.locator('h1').innerText(), /^Portfolio statement — /)
    assert.ok(await page.locator('tbody tr').count() > 0)
    assert.match(await page.locator('tfoot').innerText(), /Total\s+[\d.]+/)
    await screenshot(page, 'statement-portfolio', 'page')
    await context.close()
    watch.assertClean()
  })
})
