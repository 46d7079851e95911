import { h } from './dom.ts'

/** The states every widget's page goes through (`body[data-state]`); each widget adds those of its flows. */
export type FrameState = 'loading' | 'standalone' | 'done' | 'cancelled' | 'error'

/**
 * A widget's frame: a title and a Cancel button, a status line read out by screen readers, an alert for what went
 * wrong, and the flow's content. Styled by base.css (the `w-` classes).
 */
export class Layout<State extends string> {
  readonly root: HTMLElement
  readonly title: HTMLHeadingElement
  readonly status: HTMLParagraphElement
  readonly alert: HTMLParagraphElement
  readonly content: HTMLDivElement
  #cancel: HTMLButtonElement | undefined

  /** `beforeStatus`: what a widget shows between the header and the status line (the KYC widget's progress). */
  constructor(container: HTMLElement, options: { beforeStatus?: HTMLElement } = {}) {
    this.title = h('h1', { id: 'title', class: 'w-title', tabindex: '-1' })
    this.status = h('p', { id: 'status', class: 'w-status', role: 'status', 'aria-live': 'polite' })
    this.alert = h('p', { id: 'error', class: 'w-alert', role: 'alert', hidden: true })
    this.content = h('div', { id: 'content', class: 'w-content' })
    this.root = h('main', { class: 'w-frame', 'aria-labelledby': 'title' }, h('header', { class: 'w-header' }, this.title), options.beforeStatus, this.status, this.alert, this.content)
    container.replaceChildren(this.root)
  }

  setState(state: FrameState | State): void {
    document.body.dataset.state = state
  }

  setTitle(text: string): void {
    this.title.textContent = text
  }

  setStatus(text: string): void {
    this.status.textContent = text
  }

  showError(text: string): void {
    this.alert.textContent = text
    this.alert.hidden = false
  }

  clearError(): void {
    this.alert.textContent = ''
    this.alert.hidden = true
  }

  /** The widget is over with an error: the error state, no status, the alert saying why. */
  showFailure(text: string): void {
    this.setState('error')
    this.setStatus('')
    this.showError(text)
  }

  /** Shows the Cancel button at the top right; `onCancel` runs once. */
  addCancel(onCancel: () => void): void {
    if (this.#cancel) return
    const button = h('button', { id: 'cancel', type: 'button', class: 'w-button w-secondary' }, 'Cancel')
    button.addEventListener('click', () => onCancel(), { once: true })
    this.root.querySelector('.w-header')!.append(button)
    this.#cancel = button
  }

  removeCancel(): void {
    this.#cancel?.remove()
    this.#cancel = undefined
  }
}

/** Light or dark, from `?theme_appearance=`, the SDK's `options.theme.appearance` or a session's theme. */
export function applyAppearance(appearance: unknown): void {
  if (appearance !== 'light' && appearance !== 'dark') return
  document.body.classList.remove('theme-light', 'theme-dark')
  document.body.classList.add(`theme-${appearance}`)
}

/** The host's brand colours, when they are valid CSS colours (set through the CSSOM, which the CSP allows). */
export function applyColours(theme: { primary?: unknown; primaryForeground?: unknown } | undefined): void {
  const set = (variable: string, value: unknown) => {
    if (typeof value === 'string' && value.length <= 64 && CSS.supports('color', value)) document.body.style.setProperty(variable, value)
  }
  set('--w-primary', theme?.primary)
  set('--w-primary-foreground', theme?.primaryForeground)
}
