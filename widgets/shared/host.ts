/**
 * The protocol between a hosted widget (this page, in the SDK's iframe) and the host page that frames it:
 * the widget posts `{type:'load'}` to its parent; the parent (and only the parent, once) answers `init` with the
 * session and the options; the widget posts `ready` once, then exactly one of `complete`, `cancel` or `error`, always
 * to the origin its `init` came from, never to '*'.
 */
import { h } from './dom.ts'
import { applyAppearance, applyColours, type Layout } from './ui.ts'
import type { WidgetError, WidgetOptions } from './types.ts'

export type Logger = (...args: unknown[]) => void

/** A logger that writes `[<name>] …` to the console only in debug mode. Never give it a token, card or personal data. */
export function logger(debug: boolean, name: string): Logger {
  return debug ? (...args: unknown[]) => console.log(`[${name}]`, ...args) : () => {}
}

/** A plain object (not null, not an array), or undefined. */
export function objectOrUndefined<T>(value: unknown): T | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as T) : undefined
}

/** Whether a session bound to a site (its `domain`) is framed by a page of another site: the widget then says nothing to it. */
export function foreignDomain(domain: string | undefined, hostOrigin: string): boolean {
  return domain !== undefined && new URL(hostOrigin).hostname.toLowerCase() !== domain.toLowerCase()
}

/**
 * The messages the widget sends to the host page, to the host's origin only (the origin its `init` came from).
 * `ready` is sent once, and exactly one terminal message (`complete`, `cancel` or `error`) in the widget's life:
 * later ones are dropped.
 */
export class Host {
  readonly #origin: string
  readonly #log: Logger
  readonly #logPayloads: boolean
  #ready = false
  #finished = false

  /** `logPayloads`: whether a debug line shows a message's content beside its type (not where it carries personal data). */
  constructor(origin: string, log: Logger, logPayloads: boolean) {
    this.#origin = origin
    this.#log = log
    this.#logPayloads = logPayloads
  }

  get finished(): boolean {
    return this.#finished
  }

  ready(): void {
    if (this.#ready || this.#finished) return
    this.#ready = true
    this.#post({ type: 'ready' })
  }

  /** `value` is what `event.detail.value` reads on the host; `extra` goes beside it in the message. */
  complete(value: unknown, extra: Record<string, unknown> = {}): boolean {
    return this.#finish({ ...extra, type: 'complete', value })
  }

  cancel(): boolean {
    return this.#finish({ type: 'cancel' })
  }

  error(error: WidgetError): boolean {
    return this.#finish({ type: 'error', error })
  }

  /** Ends the widget's life without telling the host anything more (a session refused for its domain). */
  silence(): void {
    this.#finished = true
  }

  #finish(message: { type: string } & Record<string, unknown>): boolean {
    if (this.#finished) {
      this.#log(`Dropped a second terminal message (${message.type}).`)
      return false
    }
    this.#finished = true
    this.#post(message)
    return true
  }

  #post(message: { type: string } & Record<string, unknown>): void {
    if (this.#logPayloads) this.#log('[Widget -> Host]', message.type, message)
    else this.#log('[Widget -> Host]', message.type)
    window.parent.postMessage(message, this.#origin)
  }
}

/** What the handshake gives a widget to start with. */
export interface Session {
  /** The `init` message: the SDK spreads the session at its top level (`token`, `flow`, `data`…), beside `options`. */
  init: Record<string, unknown>
  options: WidgetOptions
  host: Host
  /** The host page's origin, where every message goes. */
  hostOrigin: string
  log: Logger
}

/** What differs from one widget's page to another's around the handshake. */
export interface WidgetPage {
  layout: Layout<string>
  /** The console prefix in debug mode: `payment widget frame` gives `[payment widget frame] …`. */
  logName: string
  /** Whether debug lines show the messages posted to the host (see `Host`). */
  logPayloads: boolean
  /** The page opened outside a frame: its title, and the SDK class that frames it (`PaymentWidget`). */
  standalone: { title: string; sdkClass: string }
  /** The title while the session loads. */
  title: string
  /** The message of the `widget_error` the host gets when the widget fails unexpectedly. */
  failure: string
  /** Runs the widget with the session; `ready` and the terminal message are its to post. */
  start(session: Session): Promise<void>
}

/**
 * Runs the handshake: posts `load` to the parent and starts the widget with the first `init` that comes from the
 * parent window and from an origin it can answer. Opened outside a frame, the page only says what it is.
 */
export function runWidget(page: WidgetPage): void {
  const { layout } = page
  layout.setState('loading')
  applyAppearance(new URLSearchParams(location.search).get('theme_appearance'))

  if (window.parent === window) {
    layout.setState('standalone')
    layout.setTitle(page.standalone.title)
    layout.content.append(
      h('p', { id: 'standalone', class: 'w-note' }, `This page is meant to be shown inside a website or an app: open it through the widget SDK (${page.standalone.sdkClass}.mountIframe).`),
    )
    return
  }

  layout.setTitle(page.title)
  layout.setStatus('Loading…')
  let started = false
  window.addEventListener('message', (event: MessageEvent) => {
    // Only the parent (the host page, through the SDK) may start the widget, and only once.
    if (started || event.source !== window.parent) return
    const init = objectOrUndefined<Record<string, unknown>>(event.data)
    if (init?.type !== 'init') return
    // An opaque origin ('null') cannot be answered without '*': such a host gets nothing.
    if (event.origin === 'null' || event.origin === '') return
    started = true
    const hostOrigin = event.origin
    const options = objectOrUndefined<WidgetOptions>(init.options) ?? {}
    const log = logger(options.debug === true, page.logName)
    const host = new Host(hostOrigin, log, page.logPayloads)
    const start = async () => {
      applyAppearance(options.theme?.appearance)
      applyColours(objectOrUndefined(options.theme))
      log('Debug mode is enabled.')
      log('Session received from', hostOrigin)
      await page.start({ init, options, host, hostOrigin, log })
    }
    start().catch((error: unknown) => {
      log('Unexpected failure:', error instanceof Error ? error.message : String(error))
      if (host.error({ code: 'widget_error', message: page.failure })) {
        layout.removeCancel()
        layout.setState('error')
        layout.showError('Something went wrong. Please close this window and try again.')
      }
    })
  })
  window.parent.postMessage({ type: 'load' }, '*')
}
