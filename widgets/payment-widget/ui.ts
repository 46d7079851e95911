import { clear, h } from './dom.ts'

export type State = 'loading' | 'standalone' | 'authorizing' | 'challenge' | 'confirming' | 'select' | 'done' | 'cancelled' | 'error'

/** The widget's frame: a title, a Cancel button, a status line read out by screen readers, and the flow's content. */
export class Layout {
  readonly root: HTMLElement
  readonly title: HTMLHeadingElement
  readonly status: HTMLParagraphElement
  readonly alert: HTMLParagraphElement
  readonly content: HTMLDivElement
  cancelButton: HTMLButtonElement | undefined

  constructor(container: HTMLElement) {
    this.title = h('h1', { id: 'title', class: 'pw-title', tabindex: '-1' })
    this.status = h('p', { id: 'status', class: 'pw-status', role: 'status', 'aria-live': 'polite' })
    this.alert = h('p', { id: 'error', class: 'pw-error', role: 'alert', hidden: true })
    this.content = h('div', { id: 'content', class: 'pw-content' })
    this.root = h('main', { class: 'pw', 'aria-labelledby': 'title' }, h('header', { class: 'pw-header' }, this.title), this.status, this.alert, this.content)
    clear(container)
    container.append(this.root)
  }

  setState(state: State): void {
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

  /** Shows the Cancel button at the top right; `onCancel` runs once. */
  addCancel(onCancel: () => void): void {
    if (this.cancelButton) return
    const button = h('button', { id: 'cancel', type: 'button', class: 'pw-button pw-secondary' }, 'Cancel')
    button.addEventListener('click', () => onCancel(), { once: true })
    this.root.querySelector('.pw-header')!.append(button)
    this.cancelButton = button
  }

  removeCancel(): void {
    this.cancelButton?.remove()
    this.cancelButton = undefined
  }
}

/** Light or dark, from `?theme_appearance=` and from `options.theme.appearance`. */
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
  set('--pw-primary', theme?.primary)
  set('--pw-primary-foreground', theme?.primaryForeground)
}
