import type { WidgetError } from './types.ts'

export type Logger = (...args: unknown[]) => void

/** A logger that writes `[payment widget frame] …` to the console only in debug mode (the host SDK's lines say `[PaymentWidget]`). Never give it a token or card data. */
export function logger(debug: boolean): Logger {
  return debug ? (...args: unknown[]) => console.log('[payment widget frame]', ...args) : () => {}
}

/**
 * The messages the widget sends to the host page, to the host's origin only. `ready` is sent once, and exactly one
 * terminal message (`complete`, `cancel` or `error`) is sent in the widget's life: later ones are dropped.
 */
export class Host {
  readonly #origin: string
  readonly #log: Logger
  #ready = false
  #finished = false

  constructor(origin: string, log: Logger) {
    this.#origin = origin
    this.#log = log
  }

  get finished(): boolean {
    return this.#finished
  }

  ready(): void {
    if (this.#ready || this.#finished) return
    this.#ready = true
    this.#post({ type: 'ready' })
  }

  complete(value: unknown): boolean {
    return this.#finish({ type: 'complete', value })
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
    this.#log('[Widget -> Host]', message.type, message)
    window.parent.postMessage(message, this.#origin)
  }
}
