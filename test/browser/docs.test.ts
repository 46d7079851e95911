/**
 * The API reference at /docs, in a real browser: it renders from this server alone (no CDN, no outside host),
 * shows the operations of the generated OpenAPI document, and expands them without errors.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { startApp, type TestContext } from '../helpers.ts'
import { isLocal, launchChromium } from './harness.ts'

const ARTIFACTS = path.resolve(import.meta.dirname, '..', '.artifacts')

describe('API reference page (/docs) in Chromium', { timeout: 60_000 }, () => {
  let ctx: TestContext
  let browser: Browser
  let page: Page
  let baseUrl: string
  const requests: string[] = []
  const failedRequests: string[] = []
  const consoleErrors: string[] = []
  const pageErrors: string[] = []

  before(async () => {
    const [context, launched] = await Promise.all([
      startApp('pglite'),
      launchChromium(),
    ])
    ctx = context
    browser = launched
    await ctx.app.listen({ host: '127.0.0.1', port: 0 })
    const address = ctx.app.server.address()
    assert.ok(address && typeof address === 'object', 'the app listens on a TCP port')
    baseUrl = `http://127.0.0.1:${address.port}`

    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on('request', (request) => requests.push(`${request.method()} ${request.url()}`))
    page.on('requestfailed', (request) => failedRequests.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`))
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${message.text()} (${message.location().url})`)
    })
    page.on('pageerror', (error) => pageErrors.push(error.stack ?? error.message))
    // An outside request is recorded above and fails fast here instead of waiting on DNS.
    await page.route((url) => !isLocal(url.href), (route) => route.abort('blockedbyclient'))

    const response = await page.goto(`${baseUrl}/docs`, { waitUntil: 'load' })
    assert.equal(response?.status(), 200)
    // The document has arrived and been rendered once an operation is on the page.
    await page.locator('.opblock').first().waitFor()
  })

  after(async () => {
    await browser?.close()
    await ctx?.close()
  })

  test('shows the API title and version from the generated document', async () => {
    const title = page.locator('.information-container .info .title')
    await title.waitFor()
    assert.match(await title.innerText(), /Tessera Core API/)
    assert.match(await title.innerText(), /0\.1\.0/)
    assert.match(await page.title(), /Tessera Core API/)
  })

  test('lists the operations of the generated document', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, unknown>> }>()
    const expected = Object.entries(document.paths).flatMap(([route, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${route}`))
    for (const operation of ['POST /core/oauth2/token', 'POST /core/users', 'GET /core/users/me']) assert.ok(expected.includes(operation), `${operation} is in the document`)

    const shown = await page.locator('.opblock .opblock-summary').evaluateAll((summaries) =>
      summaries.map((summary) => {
        const method = summary.querySelector('.opblock-summary-method')?.textContent?.trim() ?? ''
        const route = summary.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''
        return `${method} ${route}`
      }),
    )
    assert.deepEqual([...shown].sort(), [...expected].sort())
  })

  test('expanding POST /core/users shows its request body and responses', async () => {
    const operation = page.locator('.opblock.opblock-post').filter({ has: page.locator('.opblock-summary-path[data-path="/core/users"]') })
    await operation.locator('.opblock-summary-control').click()

    const body = operation.locator('.opblock-body')
    await body.waitFor()
    // Try-it-out is on by default, so the request body is an editable example generated from the user schema.
    const example = operation.locator('.opblock-section-request-body textarea.body-param__text')
    await example.waitFor()
    const exampleBody = JSON.parse(await example.inputValue()) as Record<string, unknown>
    for (const property of ['type', 'email', 'termsOfService', 'primaryCitizenship', 'address']) assert.ok(property in exampleBody, `the example body has ${property}`)
    const created = operation.locator('.responses-table tr.response[data-code="201"]')
    await created.waitFor()
    assert.match(await created.locator('.response-col_status').innerText(), /201/)
    for (const status of ['400', '401', '409']) assert.equal(await operation.locator(`tr.response[data-code="${status}"]`).count(), 1, `response ${status} is listed`)

    fs.mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs.png'), fullPage: true })
  })

  test('loads nothing from outside the server and nothing fails', () => {
    assert.ok(requests.some((request) => request.endsWith('/docs/json')), `the document was fetched: ${requests.join(', ')}`)
    const offsite = requests.filter((request) => !isLocal(request.slice(request.indexOf(' ') + 1)))
    assert.deepEqual(offsite, [], 'requests to hosts other than the server')
    assert.deepEqual(failedRequests, [], 'failed requests')
  })

  test('logs no console errors and throws no page errors', () => {
    assert.deepEqual(consoleErrors, [])
    assert.deepEqual(pageErrors, [])
  })
})
