import { h, type Child } from '../shared/dom.ts'
import type { Layout } from '../shared/ui.ts'
import type { PortalApi } from './api.ts'
import type { EventType } from './types.ts'

/** The states of the page (`body[data-state]`) beside the frame's: the portal is open, or it was refused or ended. */
export type State = 'portal' | 'refused' | 'ended'

export type View = { name: 'endpoints' } | { name: 'endpoint'; id: string } | { name: 'catalogue' }

/** What every view of the portal works with. */
export interface PortalContext {
  api: PortalApi
  layout: Layout<State>
  catalogue: readonly EventType[]
  /** Shows another view, and moves the focus to its heading. */
  navigate(view: View): void
}

let counter = 0

/** An id unique in the page, for `for`, `aria-labelledby`, `aria-controls`. */
export function uid(prefix: string): string {
  counter += 1
  return `${prefix}-${counter}`
}

/** A heading a view moves the focus to when it opens. */
export function viewHeading(level: 'h2' | 'h3', text: string, id = uid('heading')): HTMLHeadingElement {
  return h(level, { id, class: `wp-${level}`, tabindex: '-1' }, text)
}

/** A labelled control, with an optional hint tied to it by `aria-describedby`. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLDivElement {
  if (!control.id) control.id = uid('field')
  const hintElement = hint === undefined ? null : h('p', { id: uid('hint'), class: 'wp-hint' }, hint)
  if (hintElement) control.setAttribute('aria-describedby', hintElement.id)
  return h('div', { class: 'w-field' }, h('label', { for: control.id }, label), control, hintElement)
}

/** A line that says what went wrong with an action, read out when it appears. */
export class ErrorLine {
  readonly element = h('p', { class: 'wp-error', role: 'alert', hidden: true })

  show(text: string): void {
    this.element.textContent = text
    this.element.hidden = false
  }

  clear(): void {
    this.element.textContent = ''
    this.element.hidden = true
  }
}

export function button(text: string, options: { kind?: 'primary' | 'secondary' | 'danger'; type?: 'button' | 'submit'; attributes?: Record<string, string | boolean | undefined> } = {}): HTMLButtonElement {
  const kind = options.kind ?? 'secondary'
  const classes = kind === 'primary' ? 'w-button' : kind === 'danger' ? 'w-button wp-danger' : 'w-button w-secondary'
  return h('button', { type: options.type ?? 'button', class: classes, ...options.attributes }, text)
}

/** Runs an action with its button disabled (and marked busy) until it ends, so that it is not sent twice. */
export async function busy<T>(control: HTMLButtonElement, work: () => Promise<T>): Promise<T> {
  control.disabled = true
  control.setAttribute('aria-busy', 'true')
  try {
    return await work()
  } finally {
    control.disabled = false
    control.removeAttribute('aria-busy')
  }
}

/** A time, in a `<time>` element that keeps the exact value. */
export function time(iso: string, text: string): HTMLTimeElement {
  return h('time', { datetime: iso }, text)
}

/** Text where `code` spans (between backticks, as the catalogue writes them) become `<code>` elements. */
export function withCode(text: string): Child[] {
  return text.split('`').map((part, index) => (index % 2 === 1 ? h('code', {}, part) : part))
}

/** A description list of `[term, value]` pairs. */
export function details(rows: readonly [string, Child][], className = 'wp-details'): HTMLDListElement {
  const list = h('dl', { class: className })
  for (const [term, value] of rows) list.append(h('dt', {}, term), h('dd', {}, value))
  return list
}
