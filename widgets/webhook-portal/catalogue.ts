import { h } from '../shared/dom.ts'
import { viewHeading, withCode, type PortalContext } from './ui.ts'

/** The event catalogue: each type, what it announces, and an example of its `data` as formatted JSON (text only). */
export function catalogueView(context: PortalContext): { element: HTMLElement; focus: HTMLElement } {
  const heading = viewHeading('h2', 'Event catalogue')
  const list = h('ul', { class: 'wp-catalogue' })
  for (const entry of context.catalogue) {
    const example = JSON.stringify({ id: '…', type: entry.type, createdAt: '…', data: entry.example }, null, 2)
    list.append(
      h(
        'li',
        { class: 'wp-event-type', 'data-type': entry.type },
        h(
          'details',
          {},
          h('summary', {}, h('code', {}, entry.type), entry.sent ? null : h('span', { class: 'wp-tag' }, 'Never sent')),
          h('p', { class: 'wp-description' }, ...withCode(entry.description)),
          h('p', { class: 'wp-hint' }, 'Example message body:'),
          h('pre', { class: 'wp-json', tabindex: '0', 'aria-label': `Example of ${entry.type}` }, example),
        ),
      ),
    )
  }
  const element = h(
    'section',
    { class: 'wp-view', 'aria-labelledby': heading.id },
    heading,
    h('p', { class: 'w-note' }, 'Every message is a POST of one event: ', h('code', {}, '{id, type, createdAt, data}'), '. Open a type to see an example.'),
    list,
  )
  return { element, focus: heading }
}
