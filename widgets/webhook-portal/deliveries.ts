import { h } from '../shared/dom.ts'
import { attemptErrorText, MESSAGE_STATUS_NAMES, ORIGIN_NAMES, refusalText, timeText } from './text.ts'
import { button, ErrorLine, field, time, uid, type PortalContext } from './ui.ts'
import type { Attempt, Message, MessageStatus } from './types.ts'

const RECENT_ATTEMPTS = 20

/** One delivery attempt: how it went, and the first kilobyte of the answer, always as text. */
export function attemptItem(attempt: Attempt, withUrl = false): HTMLLIElement {
  const status = attempt.responseStatus === undefined ? null : h('span', { class: 'wp-http' }, `HTTP ${attempt.responseStatus}`)
  const errorText = attemptErrorText(attempt.error)
  return h(
    'li',
    { class: 'wp-attempt', 'data-attempt-id': attempt.id, 'data-message-id': attempt.messageId, 'data-succeeded': String(attempt.succeeded) },
    h(
      'p',
      { class: 'wp-attempt-head' },
      h('strong', {}, `Attempt ${attempt.attempt}`),
      h('span', { class: `wp-badge ${attempt.succeeded ? 'wp-ok' : 'wp-failed'}` }, attempt.succeeded ? 'Succeeded' : 'Failed'),
      status,
      h('span', { class: 'wp-duration' }, `${attempt.durationMs} ms`),
      time(attempt.createdAt, timeText(attempt.createdAt)),
    ),
    withUrl ? h('p', { class: 'wp-hint wp-url' }, `To ${attempt.url}`) : null,
    errorText === undefined ? null : h('p', { class: 'wp-attempt-error' }, attempt.errorMessage ? `${errorText}: ${attempt.errorMessage}` : errorText),
    attempt.responseExcerpt === ''
      ? h('p', { class: 'wp-hint' }, 'The answer had no body.')
      : h('div', {}, h('p', { class: 'wp-hint' }, 'Answer (first kilobyte):'), h('pre', { class: 'wp-excerpt', tabindex: '0' }, attempt.responseExcerpt)),
  )
}

function attemptList(attempts: readonly Attempt[], empty: string, withUrl = false): HTMLElement {
  return attempts.length === 0 ? h('p', { class: 'w-note' }, empty) : h('ul', { class: 'wp-attempts' }, ...attempts.map((attempt) => attemptItem(attempt, withUrl)))
}

/**
 * An endpoint's deliveries: its messages (filtered by status), the attempts of each (on demand), and its latest
 * attempts. Shown again on demand (Refresh) and after the actions that queue messages (resend, test, replay).
 */
export class Deliveries {
  readonly element: HTMLElement
  readonly #context: PortalContext
  readonly #endpointId: string
  readonly #filter: HTMLSelectElement
  readonly #messages: HTMLTableSectionElement
  readonly #empty: HTMLParagraphElement
  readonly #recent: HTMLDivElement
  readonly #updated: HTMLParagraphElement
  readonly #error = new ErrorLine()
  readonly #refresh: HTMLButtonElement
  /** The messages whose attempts are shown: kept open across refreshes. */
  readonly #open = new Set<string>()
  #loading: Promise<void> | undefined

  constructor(context: PortalContext, endpointId: string) {
    this.#context = context
    this.#endpointId = endpointId
    this.#filter = h(
      'select',
      { name: 'status' },
      h('option', { value: '' }, 'All'),
      ...(Object.entries(MESSAGE_STATUS_NAMES) as [MessageStatus, string][]).map(([value, name]) => h('option', { value }, name)),
    )
    this.#filter.addEventListener('change', () => void this.refresh())
    this.#refresh = button('Refresh')
    this.#refresh.addEventListener('click', () => void this.refresh())
    this.#messages = h('tbody')
    this.#empty = h('p', { class: 'w-note', hidden: true }, 'No message.')
    this.#recent = h('div', { class: 'wp-recent' })
    this.#updated = h('p', { class: 'wp-hint', 'aria-live': 'polite' })
    const headingId = uid('deliveries')
    const messagesId = uid('messages')
    const recentId = uid('recent')
    this.element = h(
      'section',
      { class: 'wp-section wp-deliveries', 'aria-labelledby': headingId },
      h('div', { class: 'wp-view-header' }, h('h3', { id: headingId, class: 'wp-h3' }, 'Deliveries'), h('div', { class: 'wp-actions' }, this.#refresh)),
      this.#updated,
      this.#error.element,
      h('h4', { id: messagesId, class: 'wp-h4' }, 'Messages'),
      h('div', { class: 'wp-filter' }, field('Show messages', this.#filter)),
      h(
        'div',
        { class: 'wp-table-wrap' },
        h(
          'table',
          { class: 'wp-messages', 'aria-labelledby': messagesId },
          h(
            'thead',
            {},
            h('tr', {}, ...['Event type', 'Origin', 'Status', 'Attempts', 'Created (UTC)', 'Next attempt or finished (UTC)', 'Actions'].map((name) => h('th', { scope: 'col' }, name))),
          ),
          this.#messages,
        ),
      ),
      this.#empty,
      h('h4', { id: recentId, class: 'wp-h4' }, 'Latest attempts'),
      this.#recent,
    )
  }

  /** Reads the messages, the open messages' attempts and the latest attempts again. */
  refresh(): Promise<void> {
    // One refresh at a time; one asked for during another runs after it (it may follow a new action).
    const previous = this.#loading ?? Promise.resolve()
    const next = previous.then(() => this.#load())
    this.#loading = next.finally(() => {
      if (this.#loading === next) this.#loading = undefined
    })
    return next
  }

  async #load(): Promise<void> {
    const { api } = this.#context
    this.#refresh.disabled = true
    this.element.setAttribute('aria-busy', 'true')
    try {
      const [messages, recent] = await Promise.all([api.messages(this.#endpointId, this.#filter.value as MessageStatus | ''), api.attempts(this.#endpointId, undefined, RECENT_ATTEMPTS)])
      if (messages.kind === 'aborted' || recent.kind === 'aborted') return
      if (messages.kind !== 'ok' || recent.kind !== 'ok') {
        this.#error.show(refusalText(messages.kind !== 'ok' ? messages.error : recent.kind !== 'ok' ? recent.error : { code: 'unexpected_response' }))
        return
      }
      this.#error.clear()
      const rows = await Promise.all(messages.body.messages.map((message) => this.#rows(message)))
      this.#messages.replaceChildren(...rows.flat())
      this.#empty.hidden = messages.body.messages.length > 0
      this.#recent.replaceChildren(attemptList(recent.body.attempts, 'No attempt yet.', true))
      const now = new Date().toISOString()
      this.#updated.replaceChildren('Updated ', time(now, timeText(now)), '.')
    } finally {
      this.#refresh.disabled = false
      this.element.setAttribute('aria-busy', 'false')
    }
  }

  /** A message's row, and the row of its attempts when they are open. */
  async #rows(message: Message): Promise<HTMLTableRowElement[]> {
    const attemptsId = uid('message-attempts')
    const open = this.#open.has(message.id)
    const toggle = button(open ? 'Hide attempts' : 'Attempts', { attributes: { 'aria-expanded': String(open), 'aria-controls': attemptsId } })
    const resend = button('Resend')
    const when = message.status === 'pending' ? message.nextAttemptAt : message.finishedAt
    const row = h(
      'tr',
      { class: 'wp-message', 'data-message-id': message.id, 'data-event-id': message.eventId, 'data-status': message.status },
      h('td', {}, h('code', {}, message.eventType)),
      h('td', {}, ORIGIN_NAMES[message.origin] ?? message.origin),
      h('td', {}, h('span', { class: `wp-badge wp-${message.status}` }, MESSAGE_STATUS_NAMES[message.status] ?? message.status)),
      h('td', { class: 'wp-count' }, String(message.attempts)),
      h('td', {}, time(message.createdAt, timeText(message.createdAt, false))),
      h('td', {}, when === undefined ? '—' : time(when, timeText(when, false))),
      h('td', {}, h('div', { class: 'wp-actions' }, toggle, resend)),
    )
    const cell = h('td', { colspan: '7' })
    const attemptsRow = h('tr', { id: attemptsId, class: 'wp-attempts-row', 'data-message-id': message.id, hidden: !open }, cell)
    const showAttempts = async () => {
      const result = await this.#context.api.attempts(this.#endpointId, message.id)
      if (result.kind === 'aborted') return
      cell.replaceChildren(result.kind === 'ok' ? attemptList(result.body.attempts, 'No attempt yet.') : h('p', { class: 'wp-error' }, refusalText(result.error)))
    }
    if (open) await showAttempts()

    toggle.addEventListener('click', () => {
      const opening = !this.#open.has(message.id)
      if (opening) this.#open.add(message.id)
      else this.#open.delete(message.id)
      toggle.textContent = opening ? 'Hide attempts' : 'Attempts'
      toggle.setAttribute('aria-expanded', String(opening))
      attemptsRow.hidden = !opening
      if (opening) {
        cell.replaceChildren(h('p', { class: 'wp-hint' }, 'Loading…'))
        void showAttempts()
      }
    })
    resend.addEventListener('click', () => {
      resend.disabled = true
      void this.#context.api.resend(this.#endpointId, message.id).then(async (result) => {
        resend.disabled = false
        if (result.kind === 'aborted') return
        if (result.kind !== 'ok') {
          this.#error.show(refusalText(result.error))
          return
        }
        this.#context.layout.setStatus(`The ${message.eventType} event was queued again.`)
        await this.refresh()
      })
    })
    return [row, attemptsRow]
  }
}
