/**
 * What the browser tests share: Chromium (headless, from CHROMIUM_PATH), pages that may load only from the loopback
 * servers (anything else is recorded and aborted), the script errors and CSP violations they collect, screenshots,
 * and, for the widgets a client page mounts through Tessera's SDK (KYC, travel rule), that client page, a foreign
 * frame of a third origin, and the events the page records.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import path from 'node:path'
import { chromium, type Browser, type BrowserContext, type FrameLocator, type Page } from 'playwright-core'
import { startApp, type TestContext } from '../helpers.ts'

const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const ARTIFACTS = path.resolve(import.meta.dirname, '..', '.artifacts')
/** `UPDATE_SCREENSHOTS=1` also writes the screenshots the docs show (docs/images). */
const DOC_IMAGES = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve(import.meta.dirname, '..', '..', 'docs', 'images') : null
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS })
}

/** Whether a page may load the URL: loopback over http(s), or inline data. */
export function isLocal(url: string): boolean {
  const { protocol, hostname } = new URL(url)
  if (protocol === 'data:' || protocol === 'blob:' || url === 'about:blank') return true
  return (protocol === 'http:' || protocol === 'https:') && LOOPBACK.has(hostname)
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** Serves HTML pages by path on 127.0.0.1 (a port of its own: an origin of its own). */
export function serveStatic(pages: Record<string, string>): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const body = pages[new URL(request.url ?? '/', 'http://x').pathname]
    if (body === undefined) {
      response.writeHead(404).end()
      return
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(body)
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

export function closeServer(server: http.Server | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!server) return resolve()
    server.closeAllConnections()
    server.close(() => resolve())
  })
}

function originOf(server: http.Server): string {
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`
}

/** A picture of the widget (`#widget` on the page), or of the whole page, in test/.artifacts (and docs/images). */
export async function screenshot(page: Page, name: string, what: 'widget' | 'page' = 'widget'): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  const image = what === 'widget' ? await page.locator('#widget').screenshot() : await page.screenshot({ fullPage: true })
  fs.writeFileSync(path.join(ARTIFACTS, `${name}.png`), image)
  if (DOC_IMAGES) {
    fs.mkdirSync(DOC_IMAGES, { recursive: true })
    fs.writeFileSync(path.join(DOC_IMAGES, `${name}.png`), image)
  }
}

/** What the pages of a suite did wrong: script errors, CSP violations (in any frame), requests outside the loopback servers. */
export class PageWatch {
  readonly pageErrors: string[] = []
  readonly cspViolations: string[] = []
  readonly outside: string[] = []

  /** A page of its own context, watched; a request outside the loopback servers is recorded and fails fast. */
  async newPage(browser: Browser, viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport })
    const page = await context.newPage()
    page.on('pageerror', (error) => this.pageErrors.push(error.stack ?? error.message))
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) this.cspViolations.push(message.text())
    })
    page.on('request', (request) => {
      if (!isLocal(request.url())) this.outside.push(request.url())
    })
    await page.route((url) => !isLocal(url.href), (route) => route.abort('blockedbyclient'))
    return { context, page }
  }

  assertClean(): void {
    assert.deepEqual(this.outside, [])
    assert.deepEqual(this.pageErrors, [])
    assert.deepEqual(this.cspViolations, [])
  }
}

// ---- A client page that mounts a widget through the SDK -------------------------------------------------------

/** An event the client page recorded: its name and `event.detail`. */
export interface Received {
  name: string
  detail: unknown
}

export interface ClientPageOptions {
  /** The page's title. */
  title: string
  /** The SDK's class: `KycWidget`, `TravelRuleWidget`. */
  widgetClass: string
  /** The height of the widget's container (the width is 520px). */
  height: string
  /** The `value` and the rest of the `complete` the foreign frame forges. */
  forgedComplete: Record<string, unknown>
}

/**
 * The client's page: imports the SDK from Tessera, mounts the widget with the session it is given (`mount`), and
 * records every event the widget emits (`events`), as the upstream test app reads them (`e.detail`).
 * `frameForeign` adds a foreign frame first.
 */
function clientPage(tessera: string, options: ClientPageOptions): string {
  return `<!doctype html>
<meta charset="utf-8"><title>${options.title}</title>
<body>
<div id="widget"></div>
<script type="module">
  import { ${options.widgetClass} } from '${tessera}/hosted/assets/sdk.js'
  window.events = []
  window.mount = (session, options) => {
    const widget = new ${options.widgetClass}(session, options)
    for (const name of ['ready', 'complete', 'cancel', 'error']) {
      widget.on(name, (event) => window.events.push({ name, detail: event.detail }))
    }
    const container = document.getElementById('widget')
    container.style.height = '${options.height}'
    container.style.width = '520px'
    widget.mountIframe(container)
    window.widget = widget
  }
  window.frameForeign = (src) => {
    const iframe = document.createElement('iframe')
    iframe.id = 'foreign'
    iframe.src = src
    document.body.prepend(iframe)
    return new Promise((resolve) => iframe.addEventListener('load', resolve, { once: true }))
  }
  window.hostReady = true
</script>`
}

/**
 * A page of another origin framed by the client page: it posts, again and again, a forged `init` (with a session in
 * its URL's fragment) to every other frame of the client page, and `complete` and `cancel` to the client page itself.
 */
function foreignPage(forgedComplete: Record<string, unknown>): string {
  return `<!doctype html>
<meta charset="utf-8"><title>foreign</title>
<script>
  const forged = JSON.parse(decodeURIComponent(location.hash.slice(1)))
  window.posted = 0
  setInterval(() => {
    for (let i = 0; i < parent.frames.length; i++) {
      if (parent.frames[i] !== window) parent.frames[i].postMessage({ ...forged, type: 'init' }, '*')
    }
    parent.postMessage(${JSON.stringify({ type: 'complete', ...forgedComplete })}, '*')
    parent.postMessage({ type: 'cancel' }, '*')
    window.posted++
  }, 15)
</script>
<p>foreign</p>`
}

/**
 * The client page (http://127.0.0.1:A, importing the SDK from Tessera at `tessera`) and the foreign page
 * (http://127.0.0.1:F), each on its own origin.
 */
export class ClientPages {
  readonly hostUrl: string
  readonly foreignUrl: string
  readonly #servers: http.Server[]

  private constructor(host: http.Server, foreign: http.Server) {
    this.hostUrl = `${originOf(host)}/`
    this.foreignUrl = `${originOf(foreign)}/foreign`
    this.#servers = [host, foreign]
  }

  static async start(tessera: string, options: ClientPageOptions): Promise<ClientPages> {
    const [host, foreign] = await Promise.all([serveStatic({ '/': clientPage(tessera, options) }), serveStatic({ '/foreign': foreignPage(options.forgedComplete) })])
    return new ClientPages(host, foreign)
  }

  /** The client page, loaded and ready to mount. */
  async open(browser: Browser, watch: PageWatch, viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const opened = await watch.newPage(browser, viewport)
    const response = await opened.page.goto(this.hostUrl, { waitUntil: 'load' })
    assert.equal(response?.status(), 200)
    await opened.page.waitForFunction(() => (window as unknown as { hostReady?: boolean }).hostReady === true)
    return opened
  }

  /** Frames the foreign page on the client page; it forges `init` with `session`. */
  async frameForeign(page: Page, session: unknown): Promise<void> {
    const src = `${this.foreignUrl}#${encodeURIComponent(JSON.stringify(session))}`
    await page.evaluate((url) => (window as unknown as { frameForeign: (src: string) => Promise<void> }).frameForeign(url), src)
  }

  /** Waits until the foreign frame has posted more than `times` rounds of forgeries. */
  async foreignPosted(page: Page, times: number): Promise<void> {
    const foreign = page.frames().find((frame) => frame.url().startsWith(this.foreignUrl))!
    await foreign.waitForFunction((n) => (window as unknown as { posted: number }).posted > n, times)
  }

  close(): Promise<void> {
    return Promise.all(this.#servers.map((server) => closeServer(server))).then(() => {})
  }
}

/**
 * A suite of a widget mounted by a client page: Tessera listening on a free port, its public URL (the widget's and the
 * API's origin) on `localhost` while the client page is on 127.0.0.1, so that the two are cross-origin as for a real
 * client; Chromium; the client pages; and what the pages did wrong.
 */
export class WidgetSuite {
  readonly browser: Browser
  readonly ctx: TestContext
  /** A token of the client, holding every scope. */
  readonly token: string
  readonly pages: ClientPages
  readonly watch = new PageWatch()

  private constructor(browser: Browser, ctx: TestContext, token: string, pages: ClientPages) {
    this.browser = browser
    this.ctx = ctx
    this.token = token
    this.pages = pages
  }

  /** `env`: Tessera's configuration beside its public URL. */
  static async start(env: Record<string, string>, page: ClientPageOptions): Promise<WidgetSuite> {
    const port = await freePort()
    const [browser, ctx] = await Promise.all([launchChromium(), startApp('pglite', { PUBLIC_URL: `http://localhost:${port}`, ...env })])
    await ctx.app.listen({ host: '127.0.0.1', port })
    const [token, pages] = await Promise.all([ctx.token(), ClientPages.start(`http://localhost:${port}`, page)])
    return new WidgetSuite(browser, ctx, token, pages)
  }

  /** The client page, loaded and ready to mount, in a context of its own. */
  open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    return this.pages.open(this.browser, this.watch, viewport)
  }

  async close(): Promise<void> {
    await this.browser.close()
    await this.pages.close()
    await this.ctx.close()
  }
}

/** Mounts the widget on the client page with a session (as the API created it) and SDK options. */
export async function mount(page: Page, session: unknown, options: Record<string, unknown> = {}): Promise<FrameLocator> {
  await page.evaluate(([s, o]) => (window as unknown as { mount: (s: unknown, o: unknown) => void }).mount(s, o), [session, options] as const)
  return page.frameLocator('#widget iframe')
}

/** The events the client page recorded so far. */
export function events(page: Page): Promise<Received[]> {
  return page.evaluate(() => (window as unknown as { events: Received[] }).events)
}

/** The events the client page recorded, once one of `terminal` is among them. */
export async function eventsUntil(page: Page, terminal: readonly string[] = ['complete', 'cancel', 'error'], timeout = 30_000): Promise<Received[]> {
  await page.waitForFunction((names) => (window as unknown as { events: Received[] }).events.some((event) => names.includes(event.name)), terminal, { timeout })
  return events(page)
}

/** The one terminal event among those received. */
export function terminalOf(received: Received[]): Received {
  const terminal = received.filter((event) => ['complete', 'cancel', 'error'].includes(event.name))
  assert.equal(terminal.length, 1, `exactly one terminal event: ${JSON.stringify(received)}`)
  return terminal[0]!
}

/** Waits for the widget to end, and checks it ended with `cancel` (no detail) after `ready` alone. */
export async function assertCancelled(page: Page): Promise<void> {
  const received = await eventsUntil(page)
  assert.deepEqual(received.map((event) => event.name), ['ready', 'cancel'])
  assert.equal(terminalOf(received).detail, null)
}
