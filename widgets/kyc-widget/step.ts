import { h } from '../shared/dom.ts'
import type { Logger } from '../shared/host.ts'
import type { ApiResult, KycApi } from './api.ts'
import type { Layout } from './ui.ts'
import type { WidgetError } from './types.ts'

/** What a step (one process) works with. */
export interface StepContext {
  api: KycApi
  layout: Layout
  log: Logger
  /** Whether the widget is over (cancelled, or failed): a step stops at once. */
  stopped(): boolean
  /** Ends the widget with an error the user cannot fix here (the host hears `error`). */
  fail(error: WidgetError): void
}

/**
 * Whether a refusal ends the widget: the session's token no longer works (expired, revoked) or may not do this. The
 * rest (invalid answers, a busy provider, no connectivity) is shown in the step, and the user may try again.
 */
export function fatal(result: ApiResult<unknown>): WidgetError | undefined {
  if (result.kind === 'refused' && (result.status === 401 || result.status === 403)) return result.error
  return undefined
}

type Control = HTMLInputElement | HTMLSelectElement

/**
 * The inputs of a form, each with its label, an optional hint and its own error message, tied together with
 * `aria-describedby` and `aria-invalid`.
 */
export class Fields {
  readonly #fields = new Map<string, { control: Control; error: HTMLParagraphElement; hint: string | undefined }>()

  /** A labelled row for `control` (whose `id` names the field). */
  /** `optional` fields are not `required`, and say so in their label unless `quiet` (their group says it). */
  row(control: Control, label: string, options: { hint?: string; optional?: boolean; quiet?: boolean } = {}): HTMLDivElement {
    const id = control.id
    const hintId = options.hint ? `${id}-hint` : undefined
    const error = h('p', { id: `${id}-error`, class: 'w-field-error', hidden: true })
    if (!options.optional) control.setAttribute('required', '')
    if (hintId) control.setAttribute('aria-describedby', hintId)
    control.addEventListener('input', () => this.setError(id, undefined))
    control.addEventListener('change', () => this.setError(id, undefined))
    this.#fields.set(id, { control, error, hint: hintId })
    return h(
      'div',
      { class: 'w-field' },
      h('label', { for: id }, label, options.optional && !options.quiet ? h('span', { class: 'kw-optional' }, ' (optional)') : null),
      options.hint ? h('p', { id: hintId, class: 'kw-hint' }, options.hint) : null,
      control,
      error,
    )
  }

  control<T extends Control = HTMLInputElement>(id: string): T {
    return this.#fields.get(id)!.control as T
  }

  has(id: string): boolean {
    return this.#fields.has(id)
  }

  value(id: string): string {
    const field = this.#fields.get(id)
    return field ? field.control.value.trim() : ''
  }

  /** Shows (or, with `undefined`, clears) the error of a field. */
  setError(id: string, text: string | undefined): void {
    const field = this.#fields.get(id)
    if (!field) return
    field.error.textContent = text ?? ''
    field.error.hidden = text === undefined
    const described = [field.hint, text === undefined ? undefined : field.error.id].filter((value) => value !== undefined).join(' ')
    if (described === '') field.control.removeAttribute('aria-describedby')
    else field.control.setAttribute('aria-describedby', described)
    if (text === undefined) field.control.removeAttribute('aria-invalid')
    else field.control.setAttribute('aria-invalid', 'true')
  }

  clearErrors(): void {
    for (const id of this.#fields.keys()) this.setError(id, undefined)
  }

  /** Moves the focus to the first field in error; false when none is. */
  focusFirstInvalid(): boolean {
    const first = [...this.#fields.values()].find((field) => field.control.getAttribute('aria-invalid') === 'true')
    first?.control.focus()
    return first !== undefined
  }
}

/** Disables a form while a request is under way (and tells assistive technology it is busy). */
export function setBusy(form: HTMLFormElement, busy: boolean): void {
  for (const element of form.querySelectorAll<HTMLButtonElement | HTMLInputElement | HTMLSelectElement>('button, input, select')) element.disabled = busy
  if (busy) form.setAttribute('aria-busy', 'true')
  else form.removeAttribute('aria-busy')
}
