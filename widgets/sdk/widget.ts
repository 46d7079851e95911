/// <reference lib="dom" />
/**
 * The base of every widget class: it frames the widget page at `session.url`, answers the frame's `load` with the
 * session (`init`), and turns the frame's messages into events (`ready`, `complete`, `cancel`, `error`).
 *
 * It behaves like the upstream `Widget` of `@uphold/enterprise-widget-sdk-core`, with one addition: a message is
 * accepted only from the origin of `session.url` (as upstream) *and* from the mounted frame's own window (Tessera),
 * so that another window of the widget's origin (a second tab's frame, a popup) cannot speak for this widget.
 */
import type {
  WidgetEventMap,
  WidgetInitMessage,
  WidgetMountIframeOptions,
  WidgetOptions,
  WidgetSession,
} from './types.ts'

/** The key of a widget's logger: `widget[logSymbol].log(...)` logs in debug mode only. */
export const logSymbol = Symbol('log')

type ConsoleMethod = 'log' | 'warn'

/** The origin of a URL, or undefined when it is not one (`'null'`, an opaque origin, garbage). */
function originOf(url: string): string | undefined {
  try {
    const { origin } = new URL(url)
    return origin === 'null' ? undefined : origin
  } catch {
    return undefined
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null
}

/** The value with its `token` hidden, for the debug log: a session's token does not belong in a console. */
export function redactToken<T>(value: T): T {
  if (!isRecord(value) || typeof value.token !== 'string') return value
  return { ...value, token: '[redacted]' }
}

export class Widget<
  TSession extends WidgetSession = WidgetSession,
  TEventMap extends WidgetEventMap = WidgetEventMap,
  TOptions extends WidgetOptions = WidgetOptions,
> extends EventTarget {
  /** The name the debug log is prefixed with; a subclass without its own uses its constructor's name. */
  static readonly widgetName: string = 'Widget'

  session: TSession
  options?: TOptions
  mountOptions?: WidgetMountIframeOptions

  #iframe?: HTMLIFrameElement
  /** The listeners added with `on`, by event name: `unmount` removes them all. */
  readonly #listeners = new Map<string, EventListener[]>()

  readonly [logSymbol] = {
    log: (...messages: unknown[]): void => this.#write('log', messages),
    warn: (...messages: unknown[]): void => this.#write('warn', messages),
  }

  constructor(session: TSession, options?: TOptions) {
    super()
    this.session = session
    this.options = options
    this[logSymbol].log('Debug mode is enabled.')
  }

  /** Calls `listener` each time the widget emits `event` (until `off` or `unmount`). */
  on<K extends keyof TEventMap & string>(event: K, listener: (event: TEventMap[K]) => void): void {
    const added = listener as unknown as EventListener
    this.addEventListener(event, added)
    const listeners = this.#listeners.get(event) ?? []
    listeners.push(added)
    this.#listeners.set(event, listeners)
    this[logSymbol].log(`Added listener for event: '${event}'.`)
  }

  /** Stops calling `listener` for `event`. A listener that was not added is ignored. */
  off<K extends keyof TEventMap & string>(event: K, listener: (event: TEventMap[K]) => void): void {
    const removed = listener as unknown as EventListener
    this.removeEventListener(event, removed)
    const remaining = (this.#listeners.get(event) ?? []).filter((current) => current !== removed)
    if (remaining.length > 0) this.#listeners.set(event, remaining)
    else this.#listeners.delete(event)
    this[logSymbol].log(`Removed listener for event: '${event}'.`)
  }

  /**
   * Frames the widget in `element` (100% of its size, no border) and starts listening to it.
   * @throws TypeError when `element` is not an HTMLElement.
   * @throws Error `Unable to mount widget: ` (its `cause` says why) when the frame cannot be made; the widget is
   *   then unmounted.
   */
  mountIframe(element: HTMLElement, mountOptions?: WidgetMountIframeOptions): void {
    this[logSymbol].log('Validating element and initializing iframe mounting.')
    if (!element || !(element instanceof HTMLElement)) throw new TypeError("Type of 'element' parameter is invalid")
    this.mountOptions = mountOptions
    try {
      this[logSymbol].log('Starting widget event listener.')
      window.addEventListener('message', this.#onMessage)
      this[logSymbol].log('Creating and appending iframe to the DOM.')
      this.#createIframe(element)
      this[logSymbol].log('Widget successfully mounted.')
    } catch (error) {
      this[logSymbol].log('Error occurred while mounting the widget in iframe: ', error)
      this.unmount()
      throw new Error('Unable to mount widget: ', { cause: error })
    }
  }

  /** Removes the frame, stops listening to it, and removes every listener added with `on`. */
  unmount(): void {
    window.removeEventListener('message', this.#onMessage)
    for (const [event, listeners] of this.#listeners) {
      for (const listener of listeners) this.removeEventListener(event, listener)
    }
    this.#listeners.clear()
    if (this.#iframe) {
      this.#iframe.remove()
      this.#iframe = undefined
    }
  }

  /** The frame's `allow` attribute (permissions policy). */
  protected getIframeAllowAttribute(): string {
    return "clipboard-write 'src'; clipboard-read 'src';"
  }

  #createIframe(element: HTMLElement): void {
    const url = new URL(this.session.url)
    const appearance = this.options?.theme?.appearance
    if (appearance) url.searchParams.set('theme_appearance', appearance)

    const iframe = document.createElement('iframe')
    iframe.setAttribute('src', url.toString())
    iframe.setAttribute('allow', this.getIframeAllowAttribute())
    iframe.style.width = '100%'
    iframe.style.height = '100%'
    iframe.style.border = 'none'

    // Mounting again replaces the previous frame instead of leaving it behind, unheard.
    this.#iframe?.remove()
    element.appendChild(iframe)
    this.#iframe = iframe
  }

  #emit(event: string, detail: unknown = null): void {
    this[logSymbol].log(`'${event}' event raised. Details: `, detail)
    this.dispatchEvent(new CustomEvent(event, { detail }))
  }

  readonly #onMessage = (event: MessageEvent): void => {
    const iframe = this.#iframe
    const eventOrigin = originOf(event.origin)
    const widgetOrigin = originOf(this.session.url)
    if (eventOrigin === undefined || eventOrigin !== widgetOrigin) {
      this[logSymbol].warn(`[Widget -> Host] Discarding a message from '${event.origin}': the widget's origin is '${widgetOrigin}'.`)
      return
    }
    if (!iframe || event.source === null || event.source !== iframe.contentWindow) {
      this[logSymbol].warn(`[Widget -> Host] Discarding a message from '${event.origin}': it does not come from this widget's frame.`)
      return
    }

    const data: unknown = event.data
    if (!isRecord(data)) return
    this[logSymbol].log('[Widget -> Host] ', data)

    switch (data.type) {
      case 'load': {
        const init: WidgetInitMessage<TSession, TOptions> = { ...this.session, options: this.options, type: 'init' }
        // The session goes to the frame that just spoke from the widget's origin (checked above), and only while
        // it still shows that origin: a frame that navigated away meanwhile never gets the token (upstream: '*').
        iframe.contentWindow?.postMessage(init, widgetOrigin)
        this[logSymbol].log('[Host -> Widget] ', redactToken(init))
        break
      }
      case 'ready':
        this.#emit('ready')
        break
      case 'complete':
        this.#emit('complete', data)
        break
      case 'cancel':
        this.#emit('cancel')
        break
      case 'error':
        this.#emit('error', data)
        break
      case 'force_repaint': {
        // A workaround for WKWebView (iOS), which may not repaint the frame after a view transition inside it:
        // nudging the opacity forces a repaint.
        iframe.style.opacity = '0.99'
        setTimeout(() => {
          if (this.#iframe === iframe) iframe.style.opacity = '1'
        }, 0)
        break
      }
      default:
        break
    }
  }

  #write(method: ConsoleMethod, messages: unknown[]): void {
    if (!this.options?.debug) return
    const constructor = this.constructor as typeof Widget
    const name = Object.hasOwn(constructor, 'widgetName') ? constructor.widgetName : constructor.name
    console[method](`[${name}] `, ...messages)
  }
}
