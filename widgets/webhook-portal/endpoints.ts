import { h } from '../shared/dom.ts'
import { endpointForm } from './form.ts'
import { endpointStatusText, eventTypesText, refusalText } from './text.ts'
import { button, ErrorLine, uid, viewHeading, type PortalContext } from './ui.ts'
import type { Endpoint } from './types.ts'

/** One endpoint of the list: its URL, what it is for, whether it is enabled (and why not), and the way to manage it. */
function endpointItem(context: PortalContext, endpoint: Endpoint): HTMLLIElement {
  const titleId = uid('endpoint')
  const manage = button('Manage', { attributes: { 'aria-describedby': titleId } })
  manage.addEventListener('click', () => context.navigate({ name: 'endpoint', id: endpoint.id }))
  return h(
    'li',
    { class: 'wp-endpoint', 'data-endpoint-id': endpoint.id, 'data-status': endpoint.status },
    h(
      'article',
      { 'aria-labelledby': titleId },
      h('h3', { id: titleId, class: 'wp-h3 wp-url' }, endpoint.url),
      endpoint.description === '' ? null : h('p', { class: 'wp-description' }, endpoint.description),
      h('p', { class: 'wp-meta' }, h('span', { class: `wp-badge wp-${endpoint.status}` }, endpointStatusText(endpoint)), h('span', { class: 'wp-types-summary' }, eventTypesText(endpoint.eventTypes))),
      h('div', { class: 'wp-actions' }, manage),
    ),
  )
}

/** The organization's endpoints, and the form that adds one. */
export function endpointsView(context: PortalContext): { element: HTMLElement; focus: HTMLElement } {
  const heading = viewHeading('h2', 'Endpoints')
  const error = new ErrorLine()
  const list = h('ul', { class: 'wp-endpoints', 'aria-labelledby': heading.id })
  const empty = h('p', { class: 'w-note', hidden: true }, 'No endpoint yet. Add one to start receiving webhooks.')
  const formArea = h('div', { class: 'wp-form-area' })
  const add = button('Add endpoint', { kind: 'primary' })
  const refresh = button('Refresh')

  const load = async () => {
    const result = await context.api.endpoints()
    if (result.kind === 'aborted') return
    if (result.kind !== 'ok') {
      error.show(refusalText(result.error))
      return
    }
    error.clear()
    list.replaceChildren(...result.body.endpoints.map((endpoint) => endpointItem(context, endpoint)))
    empty.hidden = result.body.endpoints.length > 0
    list.setAttribute('aria-busy', 'false')
  }

  add.addEventListener('click', () => {
    add.hidden = true
    const form = endpointForm(context, {
      save: (input) => context.api.createEndpoint(input),
      saved: (endpoint) => {
        context.layout.setStatus(`Endpoint ${endpoint.url} added.`)
        context.navigate({ name: 'endpoint', id: endpoint.id })
      },
      cancel: () => {
        formArea.replaceChildren()
        add.hidden = false
        add.focus()
      },
    })
    formArea.replaceChildren(form.element)
    form.focus.focus()
  })
  refresh.addEventListener('click', () => {
    refresh.disabled = true
    void load().finally(() => {
      refresh.disabled = false
    })
  })

  list.setAttribute('aria-busy', 'true')
  void load()
  const element = h(
    'section',
    { class: 'wp-view', 'aria-labelledby': heading.id },
    h('div', { class: 'wp-view-header' }, heading, h('div', { class: 'wp-actions' }, refresh, add)),
    error.element,
    formArea,
    empty,
    list,
  )
  return { element, focus: heading }
}
