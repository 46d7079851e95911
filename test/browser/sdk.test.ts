/**
 * The widget SDK (widgets/sdk) in a real browser, across real origins: a host page (127.0.0.1:A) loads the SDK
 * bundle and mounts widgets whose frame is a fake widget page on another origin (localhost:B); a third origin
 * (127.0.0.1:C) plays a foreign frame on the host page. The fake widget posts `load`, records the `init` it gets,
 * and posts whatever the test asks it to.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, beforeEach, describe, test } from 'node:test'
import { build } from 'esbuild'
import type { Browser, Frame, Page } from 'playwright-core'
import type * as Sdk from '../../widgets/sdk/index.ts'
import { launchChromium } from './harness.ts'

const ROOT = path.resolve(import.meta.dirname, '..', '..')
const SDK_ENTRY = path.join(ROOT, 'widgets', 'sdk', 'index.ts')
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])
const TOKEN = 'session-token-4f1c9e'

/** Whether the page may load the URL: loopback over http(s), or inline data. */
function isLocal(url: string): boolean {
  const { protocol, hostname } = new URL(url)
  if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return true
  return (protocol === 'http:' || protocol === 'https:') && LOOPBACK.has(hostname)
}

// ------------------------------------------------------------------------------------------------------------
// The pages

/**
 * The fake widget (also the foreign page and the impostor): it records what its parent posts to it, posts `load`
 * at once, and posts anything on command (`send`).
 */
const FAKE_WIDGET_PAGE = `<!doctype html>
<meta charset="utf-8"><title>fake widget</title>
<script>
  window.inits = []
  window.addEventListener('message', (event) => {
    if (event.source !== window.parent) return
    const data = event.data
    window.inits.push({ origin: event.origin, data, hasOptions: typeof data === 'object' && data !== null && 'options' in data, optionsIsUndefined: typeof data === 'object' && data !== null && data.options === undefined })
  })
  window.send = (message) => window.parent.postMessage(message, '*')
  window.send({ type: 'load' })
</script>
<p>fake widget</p>`

/**
 * The host page: loads the SDK bundle, records every message the window receives (`raw`, a listener added before
 * any widget's, so once a message is in `raw` every widget has handled it too), every event widgets emit
 * (`events`), and every console call (`logs`).
 */
const HOST_PAGE = `<!doctype html>
<meta charset="utf-8"><title>host</title>
<body>
<script>
  window.raw = []
  window.events = []
  window.logs = []
  window.messageListeners = { added: [], removed: [] }
  window.addEventListener('message', (event) => window.raw.push({ origin: event.origin, data: event.data }))
  for (const level of ['log', 'warn', 'info', 'error', 'debug']) {
    const original = console[level].bind(console)
    console[level] = (...args) => {
      window.logs.push({ level, args: args.map((arg) => { try { return typeof arg === 'string' ? arg : JSON.stringify(arg) } catch { return String(arg) } }) })
      original(...args)
    }
  }
  // Which functions are added and removed as window 'message' listeners (after the host's own, above).
  const add = window.addEventListener.bind(window)
  const remove = window.removeEventListener.bind(window)
  window.addEventListener = (type, listener, options) => { if (type === 'message') window.messageListeners.added.push(listener); return add(type, listener, options) }
  window.removeEventListener = (type, listener, options) => { if (type === 'message') window.messageListeners.removed.push(listener); return remove(type, listener, options) }
</script>
<script type="module">
  import * as sdk from '/sdk.js'
  window.sdk = sdk
  let count = 0
  /** Mounts a widget of the class named, with a listener recording each event; returns the id of its container. */
  window.mount = (className, session, options) => {
    const widget = new sdk[className](session, options)
    for (const name of ['ready', 'complete', 'cancel', 'error']) {
      widget.on(name, (event) => window.events.push({ name, detail: event.detail, custom: event instanceof CustomEvent }))
    }
    const container = document.createElement('div')
    container.id = 'widget-' + ++count
    container.style.height = '300px'
    document.body.append(container)
    widget.mountIframe(container)
    window.widget = widget
    return container.id
  }
  /** Frames a page that is not a widget (a foreign origin, another window of the widget's origin...). */
  window.frame = (src, attributes = {}) => {
    const iframe = document.createElement('iframe')
    for (const [name, value] of Object.entries(attributes)) iframe.setAttribute(name, value)
    iframe.src = src
    document.body.append(iframe)
  }
  window.hostReady = true
</script>`

interface Recorded {
  name: string
  detail: unknown
  custom: boolean
}

interface HostWindow {
  sdk: typeof Sdk
  widget: Sdk.PaymentWidget
  raw: { origin: string; data: unknown }[]
  events: Recorded[]
  logs: { level: string; args: string[] }[]
  messageListeners: { added: unknown[]; removed: unknown[] }
  mount: (className: 'Widget' | 'PaymentWidget' | 'TravelRuleWidget' | 'KycWidget', session: Sdk.WidgetSession, options?: Sdk.PaymentWidgetOptions) => string
  frame: (src: string, attributes?: Record<string, string>) => void
  hostReady?: boolean
}

interface FakeWindow {
  inits: { origin: string; data: Record<string, unknown>; hasOptions: boolean; optionsIsUndefined: boolean }[]
  send: (message: unknown) => void
}

// ------------------------------------------------------------------------------------------------------------
// Servers

function serve(routes: Record<string, { type: string; body: string }>): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const route = routes[new URL(request.url ?? '/', 'http://x').pathname]
    if (!route) {
      response.writeHead(404).end()
      return
    }
    response.writeHead(200, { 'content-type': route.type, 'cache-control': 'no-store' }).end(route.body)
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

function portOf(server: http.Server): number {
  return (server.address() as AddressInfo).port
}

function close(server: http.Server | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!server) return resolve()
    server.closeAllConnections()
    server.close(() => resolve())
  })
}

// ------------------------------------------------------------------------------------------------------------

describe('widget SDK in Chromium', { timeout: 120_000 }, () => {
  let browser: Browser
  let hostServer: http.Server
  let widgetServer: http.Server
  let foreignServer: http.Server
  let hostOrigin: string
  let widgetOrigin: string
  let foreignOrigin: string
  let bundleInputs: string[]
  let page: Page
  let mounts = 0
  /** The id of the container of the last widget mounted. */
  let lastId = ''
  const pageErrors: string[] = []
  const offsite: string[] = []

  before(async () => {
    // Built as the server builds /hosted/assets/sdk.js (src/http/browser-bundles.ts): minified, for ES2022.
    const bundle = await build({ entryPoints: [SDK_ENTRY], absWorkingDir: ROOT, bundle: true, format: 'esm', target: ['es2022'], minify: true, write: false, metafile: true, logLevel: 'silent' })
    bundleInputs = Object.keys(bundle.metafile.inputs)
    const sdk = bundle.outputFiles[0]!.text
    const html = 'text/html; charset=utf-8'
    ;[hostServer, widgetServer, foreignServer, browser] = await Promise.all([
      serve({ '/': { type: html, body: HOST_PAGE }, '/sdk.js': { type: 'text/javascript; charset=utf-8', body: sdk } }),
      serve({ '/widget': { type: html, body: FAKE_WIDGET_PAGE } }),
      serve({ '/forge': { type: html, body: FAKE_WIDGET_PAGE } }),
      launchChromium(),
    ])
    hostOrigin = `http://127.0.0.1:${portOf(hostServer)}`
    // Another host name as well as another port: the widget is plainly cross-origin (and cross-site) to the host.
    widgetOrigin = `http://localhost:${portOf(widgetServer)}`
    foreignOrigin = `http://127.0.0.1:${portOf(foreignServer)}`
  })

  after(async () => {
    await browser?.close()
    await Promise.all([close(hostServer), close(widgetServer), close(foreignServer)])
  })

  beforeEach(async () => {
    await page?.close()
    page = await browser.newPage()
    page.on('pageerror', (error) => pageErrors.push(error.stack ?? error.message))
    page.on('request', (request) => {
      if (!isLocal(request.url())) offsite.push(request.url())
    })
    await page.route((url) => !isLocal(url.href), (route) => route.abort('blockedbyclient'))
    await page.goto(`${hostOrigin}/`, { waitUntil: 'load' })
    await page.waitForFunction(() => (window as unknown as HostWindow).hostReady === true)
  })

  /** A session whose URL is the fake widget, told apart from other mounts by a query parameter. */
  function session(extra: Partial<Sdk.PaymentWidgetSession> = {}): Sdk.PaymentWidgetSession & { n: number } {
    const n = ++mounts
    return { url: `${widgetOrigin}/widget?n=${n}`, token: TOKEN, flow: 'select-for-deposit', ...extra, n }
  }

  /** Waits for a frame of the page whose URL starts with `prefix`. */
  async function frameOf(prefix: string): Promise<Frame> {
    const deadline = Date.now() + 10_000
    for (;;) {
      const frame = page.frames().find((candidate) => candidate.url().startsWith(prefix))
      if (frame) return frame
      if (Date.now() > deadline) throw new Error(`no frame at ${prefix} (frames: ${page.frames().map((f) => f.url()).join(', ')})`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  /** Mounts a widget and waits for the fake widget to receive its `init`; returns the widget's frame. */
  async function mount(className: Parameters<HostWindow['mount']>[0], value: Sdk.WidgetSession & { n?: number }, options?: Sdk.PaymentWidgetOptions): Promise<Frame> {
    lastId = await page.evaluate(([name, s, o]) => (window as unknown as HostWindow).mount(name, s, o), [className, value, options] as const)
    const frame = await frameOf(`${widgetOrigin}/widget?n=${value.n}`)
    await frame.waitForFunction(() => (window as unknown as FakeWindow).inits.length > 0)
    return frame
  }

  /** Has the frame post `message` to its parent, and waits until the host window has received it. */
  async function post(frame: Frame, message: unknown): Promise<void> {
    const before = await page.evaluate(() => (window as unknown as HostWindow).raw.length)
    await frame.evaluate((m) => (window as unknown as FakeWindow).send(m), message)
    await page.waitForFunction((n) => (window as unknown as HostWindow).raw.length > n, before)
  }

  const events = () => page.evaluate(() => (window as unknown as HostWindow).events)
  const inits = (frame: Frame) => frame.evaluate(() => (window as unknown as FakeWindow).inits)

  test('the bundle is the SDK alone (no dependency) and exports the widget classes', async () => {
    // types.ts holds types only, so nothing of it is bundled.
    assert.deepEqual(bundleInputs.map((input) => path.basename(input)).sort(), ['index.ts', 'kyc-widget.ts', 'payment-widget.ts', 'travel-rule-widget.ts', 'widget.ts'])
    assert.ok(bundleInputs.every((input) => input.startsWith('widgets/sdk/')), bundleInputs.join(', '))
    const exported = await page.evaluate(() => Object.keys((window as unknown as HostWindow).sdk).sort())
    assert.deepEqual(exported, ['KycWidget', 'PaymentWidget', 'TravelRuleWidget', 'Widget', 'logSymbol'])
    const hierarchy = await page.evaluate(() => {
      const { sdk } = window as unknown as HostWindow
      return [sdk.PaymentWidget, sdk.TravelRuleWidget, sdk.KycWidget].map((Class) => Class.prototype instanceof sdk.Widget && sdk.Widget.prototype instanceof EventTarget)
    })
    assert.deepEqual(hierarchy, [true, true, true])
  })

  test('the constructor keeps the session and options as given', async () => {
    const kept = await page.evaluate(() => {
      const { sdk } = window as unknown as HostWindow
      const value = { url: 'https://widgets.example/payment/', token: 't', flow: 'authorize' as const }
      const options = { debug: false, layout: 'fluid' as const }
      const widget = new sdk.PaymentWidget(value, options)
      const bare = new sdk.KycWidget({ url: 'https://widgets.example/kyc/', token: 't' })
      return { session: widget.session === value, options: widget.options === options, bareOptions: bare.options === undefined }
    })
    assert.deepEqual(kept, { session: true, options: true, bareOptions: true })
  })

  test('load is answered with init: the session spread at the top level, the options, type init', async () => {
    const value = session({ flow: 'authorize', data: { quoteId: '3f6a2d4e-0000-4000-8000-000000000001', domain: '127.0.0.1', requirements: [] } })
    const options: Sdk.PaymentWidgetOptions = { layout: 'fluid', paymentMethods: [{ type: 'card' }], theme: { appearance: 'dark', primary: { dark: '#16cb3e', light: '#0c2801' }, components: { button: { borderRadius: '8px' } } } }
    const frame = await mount('PaymentWidget', value, options)
    const [init, ...others] = await inits(frame)
    assert.deepEqual(others, [], 'one init for one load')
    assert.equal(init!.origin, hostOrigin, 'the init comes from the host page')
    assert.deepEqual(init!.data, { ...value, options, type: 'init' })

    // Each load gets an init (the widget page reloading asks again).
    await post(frame, { type: 'load' })
    await frame.waitForFunction(() => (window as unknown as FakeWindow).inits.length === 2)
    assert.deepEqual((await inits(frame))[1]!.data, { ...value, options, type: 'init' })
  })

  test('without options, init carries options: undefined', async () => {
    const value = session()
    const frame = await mount('KycWidget', value)
    const [init] = await inits(frame)
    assert.deepEqual(init!.data, { ...value, type: 'init', options: undefined })
    assert.equal(init!.hasOptions, true, 'the options key is present')
    assert.equal(init!.optionsIsUndefined, true)
  })

  test('the frame: session.url with theme_appearance when a theme appearance is given, full size, no border', async () => {
    const dark = session({ url: `${widgetOrigin}/widget?n=${mounts + 1}&keep=1` })
    const plain = session()
    const noAppearance = session()
    await mount('PaymentWidget', dark, { theme: { appearance: 'dark', primary: '#000', fontFamily: 'Helvetica' } })
    await mount('PaymentWidget', plain)
    await mount('PaymentWidget', noAppearance, { theme: {} })
    const frames = await page.evaluate(() =>
      [...document.querySelectorAll('div[id^="widget-"] > iframe')].map((iframe) => {
        const element = iframe as HTMLIFrameElement
        return { src: element.getAttribute('src'), width: element.style.width, height: element.style.height, border: element.style.borderStyle, sandbox: element.hasAttribute('sandbox') }
      }),
    )
    assert.deepEqual(frames, [
      { src: `${widgetOrigin}/widget?n=${dark.n}&keep=1&theme_appearance=dark`, width: '100%', height: '100%', border: 'none', sandbox: false },
      { src: `${widgetOrigin}/widget?n=${plain.n}`, width: '100%', height: '100%', border: 'none', sandbox: false },
      { src: `${widgetOrigin}/widget?n=${noAppearance.n}`, width: '100%', height: '100%', border: 'none', sandbox: false },
    ])
    // The session itself is left as it was: init carries the URL without the parameter.
    const frame = await frameOf(`${widgetOrigin}/widget?n=${dark.n}&`)
    assert.equal((await inits(frame))[0]!.data.url, dark.url)
  })

  test('each widget class: its allow attribute, the handshake, and its events', async () => {
    const expected = {
      Widget: "clipboard-write 'src'; clipboard-read 'src';",
      PaymentWidget: "clipboard-write 'src'; clipboard-read 'src'; payment 'src';",
      TravelRuleWidget: "clipboard-write 'src'; clipboard-read 'src';",
      KycWidget: "clipboard-write 'src'; clipboard-read 'src';",
    } as const
    for (const [className, allow] of Object.entries(expected) as [keyof typeof expected, string][]) {
      const value = session()
      const frame = await mount(className, value)
      assert.equal(await page.locator(`#${lastId} > iframe`).getAttribute('allow'), allow, className)
      assert.equal((await inits(frame))[0]!.data.type, 'init', className)
      await post(frame, { type: 'complete', value: { className } })
      const last = (await events()).at(-1)
      assert.deepEqual(last, { name: 'complete', detail: { type: 'complete', value: { className } }, custom: true }, className)
    }
  })

  test('ready, complete, cancel and error reach on() listeners with the upstream detail shapes', async () => {
    const frame = await mount('PaymentWidget', session())
    const transaction = { id: 't1', status: 'completed', origin: { asset: 'USD', amount: '10.00', node: { type: 'external-account', id: 'e1' } }, destination: { asset: 'USD', amount: '10.00', node: { type: 'account', id: 'a1' } }, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:01.000Z' }
    const authorized = { type: 'complete', value: { transaction, trigger: { reason: 'transaction-status-changed' } } }
    const card = { id: 'e1', type: 'card', status: 'ok', label: 'Visa', asset: 'USD', network: 'visa', features: ['deposit'], details: { last4Digits: '4242' }, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' }
    const selected = { type: 'complete', value: { via: 'external-account', selection: card } }
    const failed = { type: 'error', error: { code: 'session_expired', message: 'The session has expired', details: { at: 'now' } } }

    await post(frame, { type: 'ready' })
    await post(frame, authorized)
    await post(frame, selected)
    await post(frame, { type: 'cancel', reason: 'dropped by the SDK' })
    await post(frame, failed)
    // Not events: an unknown type, a message without a type, a non-object.
    await post(frame, { type: 'resize', height: 100 })
    await post(frame, { value: 1 })
    await post(frame, 'complete')

    assert.deepEqual(await events(), [
      { name: 'ready', detail: null, custom: true },
      { name: 'complete', detail: authorized, custom: true },
      { name: 'complete', detail: selected, custom: true },
      { name: 'cancel', detail: null, custom: true },
      { name: 'error', detail: failed, custom: true },
    ])
    assert.deepEqual(pageErrors, [])
  })

  test('off() removes a listener; the others stay', async () => {
    const frame = await mount('PaymentWidget', session())
    await page.evaluate(() => {
      const host = window as unknown as HostWindow & { calls: string[]; first: () => void; second: () => void }
      host.calls = []
      host.first = () => host.calls.push('first')
      host.second = () => host.calls.push('second')
      host.widget.on('complete', host.first)
      host.widget.on('complete', host.second)
      host.widget.off('complete', host.first)
      // Removing a listener that was never added (or for another event) changes nothing.
      host.widget.off('complete', () => {})
      host.widget.off('cancel', host.second)
    })
    await post(frame, { type: 'complete', value: {} })
    assert.deepEqual(await page.evaluate(() => (window as unknown as { calls: string[] }).calls), ['second'])
    assert.equal((await events()).length, 1, 'the listener added by mount still runs')
  })

  test('a forged message from a foreign origin framed in the host is ignored', async () => {
    const frame = await mount('PaymentWidget', session())
    await page.evaluate((src) => (window as unknown as HostWindow).frame(src), `${foreignOrigin}/forge`)
    const foreign = await frameOf(`${foreignOrigin}/forge`)
    await page.waitForFunction((origin) => (window as unknown as HostWindow).raw.some((message) => message.origin === origin), foreignOrigin)

    await post(foreign, { type: 'complete', value: { via: 'external-account', selection: { id: 'forged' } } })
    await post(foreign, { type: 'error', error: { code: 'forged' } })
    await post(foreign, { type: 'force_repaint' })
    const forged = await page.evaluate((origin) => (window as unknown as HostWindow).raw.filter((message) => message.origin === origin).map((message) => message.data), foreignOrigin)
    assert.equal(forged.length, 4, 'the host window did receive the load and the three forged messages')
    assert.deepEqual(await events(), [], 'no event came of them')
    assert.deepEqual(await inits(foreign), [], 'its load got no init (no token)')
    assert.equal((await inits(frame)).length, 1, 'nor did it make the widget get another init')
    const opacity = await page.evaluate(() => document.querySelector<HTMLIFrameElement>('div[id^="widget-"] > iframe')!.style.opacity)
    assert.equal(opacity, '', 'the forged force_repaint did nothing')

    // The widget's own frame is still heard.
    await post(frame, { type: 'complete', value: { via: 'external-account', selection: { id: 'real' } } })
    assert.deepEqual(await events(), [{ name: 'complete', detail: { type: 'complete', value: { via: 'external-account', selection: { id: 'real' } } }, custom: true }])
  })

  test('a window of the widget origin that is not the widget frame is ignored (Tessera hardening)', async () => {
    const frame = await mount('PaymentWidget', session())
    // Another frame of the same origin as session.url, not mounted by the SDK: it posts load at once.
    await page.evaluate((src) => (window as unknown as HostWindow).frame(src), `${widgetOrigin}/widget?impostor=1`)
    const impostor = await frameOf(`${widgetOrigin}/widget?impostor=1`)
    await page.waitForFunction(() => (window as unknown as HostWindow).raw.filter((message) => (message.data as { type?: string }).type === 'load').length === 2)

    await post(impostor, { type: 'complete', value: { via: 'external-account', selection: { id: 'forged' } } })
    await post(impostor, { type: 'cancel' })
    assert.deepEqual(await events(), [])
    assert.deepEqual(await inits(impostor), [], 'the impostor got no init')
    assert.equal((await inits(frame)).length, 1, "the impostor's load did not trigger another init")

    await post(frame, { type: 'cancel' })
    assert.deepEqual(await events(), [{ name: 'cancel', detail: null, custom: true }])
  })

  test('once the widget frame has navigated to another origin, it is not heard and its load gets no init', async () => {
    const frame = await mount('PaymentWidget', session())
    await page.evaluate(() => {
      const host = window as unknown as { framed: Window | null }
      host.framed = document.querySelector<HTMLIFrameElement>('div[id^="widget-"] > iframe')!.contentWindow
    })
    // The frame's page takes itself elsewhere (as a redirect would): the same window, another origin.
    await frame.evaluate((url) => setTimeout(() => location.assign(url), 0), `${foreignOrigin}/forge`)
    const navigated = await frameOf(`${foreignOrigin}/forge`)
    await page.waitForFunction((origin) => (window as unknown as HostWindow).raw.some((message) => message.origin === origin), foreignOrigin)
    const sameWindow = await page.evaluate(() => {
      const host = window as unknown as { framed: Window | null }
      return host.framed !== null && document.querySelector<HTMLIFrameElement>('div[id^="widget-"] > iframe')!.contentWindow === host.framed
    })
    assert.ok(sameWindow, 'the mounted frame still has the same window, so only the origin check tells it apart')

    await post(navigated, { type: 'complete', value: { via: 'external-account', selection: { id: 'forged' } } })
    assert.deepEqual(await inits(navigated), [], 'the session (token) was not sent to the other origin')
    assert.deepEqual(await events(), [])
  })

  test("a message with the opaque origin 'null' is ignored without an error", async () => {
    await mount('PaymentWidget', session())
    await page.evaluate(() =>
      (window as unknown as HostWindow).frame('about:blank', {
        sandbox: 'allow-scripts',
        srcdoc: "<script>parent.postMessage({ type: 'complete', value: { forged: true } }, '*')</script>",
      }),
    )
    await page.waitForFunction(() => (window as unknown as HostWindow).raw.some((message) => message.origin === 'null'))
    assert.deepEqual(await events(), [])
    assert.deepEqual(pageErrors, [])
  })

  test('force_repaint sets the frame opacity to 0.99, then back to 1 on the next tick', async () => {
    const frame = await mount('PaymentWidget', session())
    await page.evaluate(() => {
      const host = window as unknown as { opacities: string[] }
      const iframe = document.querySelector<HTMLIFrameElement>('div[id^="widget-"] > iframe')!
      host.opacities = []
      new MutationObserver(() => host.opacities.push(iframe.style.opacity)).observe(iframe, { attributes: true, attributeFilter: ['style'] })
    })
    await post(frame, { type: 'force_repaint' })
    await page.waitForFunction(() => (window as unknown as { opacities: string[] }).opacities.length >= 2)
    assert.deepEqual(await page.evaluate(() => (window as unknown as { opacities: string[] }).opacities), ['0.99', '1'])
    assert.deepEqual(await events(), [], 'force_repaint is not an event')
  })

  test("mountIframe throws TypeError \"Type of 'element' parameter is invalid\" for a non-element, and mounts nothing", async () => {
    const results = await page.evaluate(() => {
      const { sdk, messageListeners } = window as unknown as HostWindow
      const widget = new sdk.PaymentWidget({ url: 'http://localhost:1/widget', token: 't', flow: 'authorize' })
      const before = messageListeners.added.length
      const attempts = [null, undefined, {}, 'body', document.createTextNode('x'), document].map((value) => {
        try {
          widget.mountIframe(value as unknown as HTMLElement)
          return 'mounted'
        } catch (error) {
          return `${(error as Error).constructor.name}: ${(error as Error).message}`
        }
      })
      return { attempts, listenersAdded: messageListeners.added.length - before, iframes: document.querySelectorAll('iframe').length }
    })
    assert.deepEqual(results.attempts, Array(6).fill("TypeError: Type of 'element' parameter is invalid"))
    assert.equal(results.listenersAdded, 0)
    assert.equal(results.iframes, 0)
  })

  test("a session URL that cannot be framed: Error 'Unable to mount widget: ' with the cause, and the widget unmounted", async () => {
    const result = await page.evaluate(() => {
      const { sdk, messageListeners } = window as unknown as HostWindow
      const widget = new sdk.PaymentWidget({ url: 'not a url', token: 't', flow: 'authorize' })
      let calls = 0
      widget.on('complete', () => calls++)
      const container = document.createElement('div')
      document.body.append(container)
      try {
        widget.mountIframe(container)
        return { thrown: 'nothing' }
      } catch (error) {
        const cause = (error as Error).cause as Error
        widget.dispatchEvent(new CustomEvent('complete', { detail: null }))
        const added = messageListeners.added.at(-1)
        return {
          thrown: `${(error as Error).constructor.name}: ${(error as Error).message}`,
          cause: cause?.constructor.name,
          listenerRemoved: added !== undefined && messageListeners.removed.includes(added),
          childNodes: container.childNodes.length,
          calls,
        }
      }
    })
    assert.deepEqual(result, { thrown: 'Error: Unable to mount widget: ', cause: 'TypeError', listenerRemoved: true, childNodes: 0, calls: 0 })
  })

  test('unmount removes the frame, its message listener and every listener; the widget can be mounted again', async () => {
    const value = session()
    const frame = await mount('PaymentWidget', value)
    await post(frame, { type: 'ready' })
    const result = await page.evaluate(() => {
      const host = window as unknown as HostWindow
      const added = host.messageListeners.added.at(-1)
      const container = document.querySelector('div[id^="widget-"]')!
      host.widget.unmount()
      const before = host.events.length
      // Listeners added with on() are gone too.
      host.widget.dispatchEvent(new CustomEvent('complete', { detail: null }))
      host.widget.dispatchEvent(new CustomEvent('ready', { detail: null }))
      return {
        listenerRemoved: host.messageListeners.removed.includes(added),
        iframes: container.querySelectorAll('iframe').length,
        eventsAfter: host.events.length - before,
      }
    })
    assert.deepEqual(result, { listenerRemoved: true, iframes: 0, eventsAfter: 0 })
    // Playwright learns of the removal a moment later.
    for (let wait = 0; !frame.isDetached() && wait < 100; wait++) await new Promise((resolve) => setTimeout(resolve, 50))
    assert.ok(frame.isDetached(), 'the frame is gone')

    // Mounted again, it frames the widget anew and hears it (with listeners added again).
    await page.evaluate(() => {
      const host = window as unknown as HostWindow
      host.widget.on('cancel', (event) => host.events.push({ name: 'again', detail: event.detail, custom: true }))
      host.widget.mountIframe(document.querySelector<HTMLElement>('div[id^="widget-"]')!)
    })
    const again = await frameOf(`${widgetOrigin}/widget?n=${value.n}`)
    await again.waitForFunction(() => (window as unknown as FakeWindow).inits.length > 0)
    await post(again, { type: 'cancel' })
    assert.deepEqual((await events()).at(-1), { name: 'again', detail: null, custom: true })
  })

  test('a force_repaint under way when the widget is unmounted leaves the removed frame alone', async () => {
    const frame = await mount('PaymentWidget', session())
    await page.evaluate(() => {
      const host = window as unknown as HostWindow & { opacities: string[]; removed: HTMLIFrameElement }
      const iframe = document.querySelector<HTMLIFrameElement>('div[id^="widget-"] > iframe')!
      host.opacities = []
      host.removed = iframe
      // Unmounts as soon as the opacity drops: after the message is handled, before the next tick restores it.
      new MutationObserver(() => {
        host.opacities.push(iframe.style.opacity)
        if (iframe.style.opacity === '0.99') host.widget.unmount()
      }).observe(iframe, { attributes: true, attributeFilter: ['style'] })
    })
    await post(frame, { type: 'force_repaint' })
    await page.waitForTimeout(100)
    const after = await page.evaluate(() => {
      const host = window as unknown as { opacities: string[]; removed: HTMLIFrameElement }
      return { opacities: host.opacities, opacity: host.removed.style.opacity, attached: host.removed.isConnected }
    })
    assert.deepEqual(after, { opacities: ['0.99'], opacity: '0.99', attached: false })
    assert.deepEqual(pageErrors, [])
  })

  test('debug: true logs with the class-name prefix and never the token; otherwise nothing is logged', async () => {
    const frame = await mount('PaymentWidget', session(), { debug: true })
    await post(frame, { type: 'complete', value: {} })
    await page.evaluate((src) => (window as unknown as HostWindow).frame(src), `${foreignOrigin}/forge`)
    await page.waitForFunction((origin) => (window as unknown as HostWindow).raw.some((message) => message.origin === origin), foreignOrigin)
    const logs = await page.evaluate(() => (window as unknown as HostWindow).logs)
    assert.ok(logs.length > 0)
    for (const entry of logs) assert.equal(entry.args[0], '[PaymentWidget] ', JSON.stringify(entry))
    const texts = logs.map((entry) => entry.args.slice(1).join(' '))
    assert.ok(texts.includes('Debug mode is enabled.'), texts.join('\n'))
    assert.ok(texts.some((text) => text.startsWith('Initialized payment widget.')))
    assert.ok(texts.some((text) => text.startsWith('[Host -> Widget]') && text.includes('"type":"init"')), 'the init is logged')
    assert.ok(logs.some((entry) => entry.level === 'warn' && entry.args[1]!.includes(`'${foreignOrigin}'`)), 'the discarded foreign load is warned about')
    assert.ok(logs.every((entry) => entry.args.every((arg) => !arg.includes(TOKEN))), 'the token is never logged')

    // Without debug: the same life, not a word.
    await page.evaluate(() => {
      const host = window as unknown as HostWindow
      host.widget.unmount()
      host.logs.length = 0
    })
    const quiet = await mount('TravelRuleWidget', session({ flow: 'select-for-deposit' }), { debug: false })
    await post(quiet, { type: 'ready' })
    await post(quiet, { type: 'error', error: { code: 'x' } })
    await post(await frameOf(`${foreignOrigin}/forge`), { type: 'complete', value: {} })
    await page.evaluate(() => (window as unknown as HostWindow).widget.unmount())
    const silent = await page.evaluate(() => {
      const { sdk } = window as unknown as HostWindow
      const widget = new sdk.KycWidget({ url: 'http://localhost:1/', token: 't' })
      try {
        widget.mountIframe(null as unknown as HTMLElement)
      } catch {
        // Expected.
      }
      return (window as unknown as HostWindow).logs
    })
    assert.deepEqual(silent, [])
  })

  test('nothing was loaded from outside the loopback servers and no page error was thrown', () => {
    assert.deepEqual(offsite, [])
    assert.deepEqual(pageErrors, [])
  })
})
