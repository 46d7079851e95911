import { h } from '../shared/dom.ts'
import type { ApiResult } from './api.ts'
import { refusalText } from './text.ts'
import { button, ErrorLine, field, uid, type PortalContext } from './ui.ts'
import type { Endpoint, EndpointInput } from './types.ts'

export interface EndpointFormOptions {
  /** Editing this endpoint; adding one when absent. */
  endpoint?: Endpoint
  save(input: EndpointInput): Promise<ApiResult<{ endpoint: Endpoint }>>
  saved(endpoint: Endpoint): void
  cancel(): void
}

/**
 * The form of an endpoint: its URL, what it is for, and the event types it receives (checkboxes from the catalogue;
 * none checked means every type).
 */
export function endpointForm(context: PortalContext, options: EndpointFormOptions): { element: HTMLFormElement; focus: HTMLElement } {
  const editing = options.endpoint
  const titleId = uid('form-title')
  const url = h('input', { type: 'url', name: 'url', required: true, maxlength: '2048', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://example.com/webhooks' })
  url.value = editing?.url ?? ''
  const description = h('input', { type: 'text', name: 'description', maxlength: '500', autocomplete: 'off' })
  description.value = editing?.description ?? ''

  const selected = new Set(editing?.eventTypes ?? [])
  const boxes: HTMLInputElement[] = []
  const types = h('div', { class: 'wp-types' })
  for (const entry of context.catalogue) {
    const box = h('input', { type: 'checkbox', name: 'eventTypes', value: entry.type, id: uid('type') })
    box.checked = selected.has(entry.type)
    boxes.push(box)
    types.append(h('div', { class: 'wp-type' }, box, h('label', { for: box.id }, h('code', {}, entry.type), entry.sent ? null : h('span', { class: 'wp-tag' }, 'Never sent'))))
  }
  const typesHint = h('p', { id: uid('hint'), class: 'wp-hint' }, 'None checked: the endpoint receives every event type, including those added later.')
  const clearTypes = button('Uncheck all')
  clearTypes.addEventListener('click', () => {
    for (const box of boxes) box.checked = false
  })

  const error = new ErrorLine()
  const submit = button(editing ? 'Save changes' : 'Add endpoint', { kind: 'primary', type: 'submit' })
  const cancel = button('Cancel')
  cancel.addEventListener('click', () => options.cancel())

  const form = h(
    'form',
    { class: 'wp-form', 'aria-labelledby': titleId },
    h('h3', { id: titleId, class: 'wp-h3' }, editing ? 'Edit the endpoint' : 'Add an endpoint'),
    field('URL', url, 'Where the messages are sent, with POST: an absolute https:// (or http://) URL.'),
    field('Description (optional)', description),
    h('fieldset', { class: 'wp-fieldset', 'aria-describedby': typesHint.id }, h('legend', {}, 'Event types'), typesHint, types, h('div', { class: 'wp-actions' }, clearTypes)),
    error.element,
    h('div', { class: 'wp-actions' }, submit, cancel),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    if (submit.disabled) return
    error.clear()
    const input: EndpointInput = { url: url.value.trim(), description: description.value.trim(), eventTypes: boxes.filter((box) => box.checked).map((box) => box.value) }
    submit.disabled = true
    void options.save(input).then((result) => {
      submit.disabled = false
      if (result.kind === 'ok') options.saved(result.body.endpoint)
      else if (result.kind !== 'aborted') {
        error.show(refusalText(result.error))
        error.element.focus()
      }
    })
  })
  error.element.tabIndex = -1
  return { element: form, focus: url }
}
