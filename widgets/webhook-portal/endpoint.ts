import { h } from '../shared/dom.ts'
import { Deliveries } from './deliveries.ts'
import { endpointForm } from './form.ts'
import { endpointStatusText, eventTypesText, refusalText, timeText } from './text.ts'
import { busy, button, details, ErrorLine, field, time, uid, viewHeading, type PortalContext } from './ui.ts'
import type { Endpoint, Secrets } from './types.ts'

const MAX_GRACE_SECONDS = 604_800
const REPLAY_WINDOW_DAYS = 30

/** A time as a `datetime-local` input takes it: the browser's local time, to the minute. */
function localInputValue(date: Date): string {
  const pad = (value: number) => String(value).padStart(2, '0')
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`
}

/** A secret shown in a read-only field (easy to select), with a Copy button. */
function secretField(context: PortalContext, label: string, value: string, hint?: string): HTMLDivElement {
  const input = h('input', { type: 'text', readonly: true, class: 'wp-secret', autocomplete: 'off', spellcheck: 'false' })
  input.value = value
  input.addEventListener('focus', () => input.select())
  const wrapper = field(label, input, hint)
  const copy = button('Copy', { attributes: { 'aria-describedby': input.id } })
  copy.addEventListener('click', () => {
    const copied = navigator.clipboard?.writeText(value) ?? Promise.reject(new Error('no clipboard'))
    copied.then(
      () => context.layout.setStatus(`${label} copied.`),
      () => {
        input.focus()
        context.layout.setStatus(`${label} selected: press Ctrl+C (⌘C) to copy it.`)
      },
    )
  })
  wrapper.append(h('div', { class: 'wp-actions' }, copy))
  return wrapper
}

/**
 * The page of one endpoint: what it is (edit, disable or enable, delete), its signing secret (revealed on demand,
 * rotated), the test events and replays it can be sent, and its deliveries.
 */
export function endpointView(context: PortalContext, id: string): { element: HTMLElement; focus: HTMLElement } {
  const { api, layout } = context
  const heading = viewHeading('h2', 'Endpoint')
  heading.classList.add('wp-url')
  const back = button('← All endpoints')
  back.addEventListener('click', () => context.navigate({ name: 'endpoints' }))
  const error = new ErrorLine()
  const summary = h('div', { class: 'wp-summary' })
  const editArea = h('div', { class: 'wp-form-area' })
  const sections = h('div', { class: 'wp-sections', hidden: true })
  const element = h('section', { class: 'wp-view', 'aria-labelledby': heading.id, 'data-endpoint-id': id }, h('div', { class: 'wp-actions' }, back), heading, error.element, summary, editArea, sections)

  const deliveries = new Deliveries(context, id)

  const showSummary = (endpoint: Endpoint) => {
    heading.textContent = endpoint.url
    element.dataset.status = endpoint.status
    const edit = button('Edit')
    const toggle = button(endpoint.status === 'enabled' ? 'Disable' : 'Enable')
    const remove = button('Delete', { kind: 'danger' })
    const confirmArea = h('div', { class: 'wp-confirm-area' })
    edit.addEventListener('click', () => {
      const form = endpointForm(context, {
        endpoint,
        save: (input) => api.updateEndpoint(id, input),
        saved: (updated) => {
          editArea.replaceChildren()
          showSummary(updated)
          layout.setStatus('Changes saved.')
          heading.focus()
        },
        cancel: () => {
          editArea.replaceChildren()
          edit.focus()
        },
      })
      editArea.replaceChildren(form.element)
      form.focus.focus()
    })
    toggle.addEventListener('click', () => {
      const enabled = endpoint.status !== 'enabled'
      void busy(toggle, async () => {
        const result = await api.updateEndpoint(id, { enabled })
        if (result.kind === 'aborted') return
        if (result.kind !== 'ok') return error.show(refusalText(result.error))
        error.clear()
        showSummary(result.body.endpoint)
        layout.setStatus(enabled ? 'Endpoint enabled: what waited for it is sent now, in order.' : 'Endpoint disabled: it receives nothing until it is enabled again; what happens meanwhile waits for it.')
        summary.querySelector<HTMLButtonElement>('.wp-toggle')?.focus()
      })
    })
    toggle.classList.add('wp-toggle')
    remove.addEventListener('click', () => {
      const textId = uid('confirm')
      const confirm = button('Delete endpoint', { kind: 'danger' })
      const keep = button('Keep it')
      keep.addEventListener('click', () => {
        confirmArea.replaceChildren()
        remove.focus()
      })
      confirm.addEventListener('click', () => {
        void busy(confirm, async () => {
          const result = await api.deleteEndpoint(id)
          if (result.kind === 'aborted') return
          if (result.kind !== 'ok') return error.show(refusalText(result.error))
          layout.setStatus(`Endpoint ${endpoint.url} deleted.`)
          context.navigate({ name: 'endpoints' })
        })
      })
      confirmArea.replaceChildren(
        h(
          'div',
          { class: 'wp-confirm', role: 'group', 'aria-labelledby': textId },
          h('p', { id: textId }, 'Delete this endpoint? Its queued messages and its delivery attempts are deleted with it. This cannot be undone.'),
          h('div', { class: 'wp-actions' }, confirm, keep),
        ),
      )
      keep.focus()
    })
    summary.replaceChildren(
      details([
        ['Status', h('span', { class: `wp-badge wp-${endpoint.status}`, id: 'endpoint-status' }, endpointStatusText(endpoint))],
        ['Description', endpoint.description === '' ? '—' : endpoint.description],
        ['Event types', eventTypesText(endpoint.eventTypes)],
        ['Created', time(endpoint.createdAt, timeText(endpoint.createdAt))],
        ['Secret rotated', endpoint.secretRotatedAt ? time(endpoint.secretRotatedAt, timeText(endpoint.secretRotatedAt)) : 'Never'],
      ]),
      h('div', { class: 'wp-actions' }, edit, toggle, remove),
      confirmArea,
    )
  }

  // ---- The signing secret ----
  const secretHeading = uid('secret')
  const secretArea = h('div', { class: 'wp-secrets', id: uid('secrets'), hidden: true })
  const reveal = button('Reveal secret', { attributes: { 'aria-expanded': 'false', 'aria-controls': secretArea.id } })
  const secretError = new ErrorLine()
  const showSecrets = (secrets: Secrets) => {
    secretArea.replaceChildren(
      secretField(context, 'Current secret', secrets.secret),
      secrets.previousSecret === undefined
        ? h('p', { class: 'w-note' }, 'No previous secret signs beside it.')
        : secretField(context, 'Previous secret', secrets.previousSecret, secrets.previousSecretExpiresAt ? `Still signs beside the current one until ${timeText(secrets.previousSecretExpiresAt)}.` : undefined),
    )
    secretArea.hidden = false
    reveal.textContent = 'Hide secret'
    reveal.setAttribute('aria-expanded', 'true')
  }
  const hideSecrets = () => {
    // Gone from the page, not only hidden.
    secretArea.replaceChildren()
    secretArea.hidden = true
    reveal.textContent = 'Reveal secret'
    reveal.setAttribute('aria-expanded', 'false')
  }
  reveal.addEventListener('click', () => {
    if (!secretArea.hidden) return hideSecrets()
    void busy(reveal, async () => {
      const result = await api.secret(id)
      if (result.kind === 'aborted') return
      if (result.kind !== 'ok') return secretError.show(refusalText(result.error))
      secretError.clear()
      showSecrets(result.body)
    })
  })
  const grace = h('input', { type: 'number', name: 'graceSeconds', min: '0', max: String(MAX_GRACE_SECONDS), step: '1', inputmode: 'numeric', placeholder: 'Default' })
  const rotate = button('Rotate secret', { type: 'submit' })
  const rotateForm = h(
    'form',
    { class: 'wp-inline-form', 'aria-label': 'Rotate the secret' },
    field('Grace period, in seconds (optional)', grace, 'How long the current secret keeps signing beside the new one. Empty: the deployment\'s default; 0: it stops at once.'),
    h('div', { class: 'wp-actions' }, rotate),
  )
  rotateForm.addEventListener('submit', (event) => {
    event.preventDefault()
    if (rotate.disabled) return
    const text = grace.value.trim()
    const seconds = text === '' ? undefined : Number(text)
    if (seconds !== undefined && (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_GRACE_SECONDS)) {
      secretError.show(`The grace period is a whole number of seconds, from 0 to ${MAX_GRACE_SECONDS}.`)
      grace.focus()
      return
    }
    void busy(rotate, async () => {
      const result = await api.rotateSecret(id, seconds)
      if (result.kind === 'aborted') return
      if (result.kind !== 'ok') return secretError.show(refusalText(result.error))
      secretError.clear()
      showSecrets(result.body)
      layout.setStatus('Secret rotated: messages are signed with the new secret from now on.')
      const refreshed = await api.endpoint(id)
      if (refreshed.kind === 'ok') showSummary(refreshed.body.endpoint)
    })
  })
  const secretSection = h(
    'section',
    { class: 'wp-section', 'aria-labelledby': secretHeading },
    h('h3', { id: secretHeading, class: 'wp-h3' }, 'Signing secret'),
    h('p', { class: 'wp-hint' }, 'Verify the webhook-signature header of each message with it (Standard Webhooks). Keep it secret.'),
    h('div', { class: 'wp-actions' }, reveal),
    secretArea,
    secretError.element,
    rotateForm,
  )

  // ---- Test events and replays ----
  const testHeading = uid('test')
  const testType = h('select', { name: 'type' }, ...context.catalogue.map((entry) => h('option', { value: entry.type }, entry.sent ? entry.type : `${entry.type} (never sent)`)))
  const sendTest = button('Send test event', { type: 'submit' })
  const testError = new ErrorLine()
  const testForm = h('form', { class: 'wp-inline-form', 'aria-labelledby': testHeading }, field('Event type', testType), h('div', { class: 'wp-actions' }, sendTest))
  testForm.addEventListener('submit', (event) => {
    event.preventDefault()
    if (sendTest.disabled) return
    void busy(sendTest, async () => {
      const result = await api.sendTest(id, testType.value)
      if (result.kind === 'aborted') return
      if (result.kind !== 'ok') return testError.show(refusalText(result.error))
      testError.clear()
      layout.setStatus(`A test ${result.body.message.eventType} event was queued.`)
      await deliveries.refresh()
    })
  })
  const testSection = h(
    'section',
    { class: 'wp-section', 'aria-labelledby': testHeading },
    h('h3', { id: testHeading, class: 'wp-h3' }, 'Send a test event'),
    h('p', { class: 'wp-hint' }, 'Sends the example data of the type (see the event catalogue) to this endpoint only.'),
    testForm,
    testError.element,
  )

  const replayHeading = uid('replay')
  const since = h('input', { type: 'datetime-local', name: 'since', required: true })
  const replay = button('Replay', { type: 'submit' })
  const replayError = new ErrorLine()
  const replayResult = h('p', { class: 'w-note', 'aria-live': 'polite' })
  const resetSince = () => {
    const now = new Date()
    since.min = localInputValue(new Date(now.getTime() - REPLAY_WINDOW_DAYS * 86_400_000 + 60_000))
    since.max = localInputValue(now)
    if (since.value === '') since.value = localInputValue(new Date(now.getTime() - 3_600_000))
  }
  resetSince()
  const replayForm = h('form', { class: 'wp-inline-form', 'aria-labelledby': replayHeading }, field('Since (your local time)', since), h('div', { class: 'wp-actions' }, replay))
  replayForm.addEventListener('submit', (event) => {
    event.preventDefault()
    if (replay.disabled) return
    const from = new Date(since.value)
    if (since.value === '' || Number.isNaN(from.getTime())) {
      replayError.show('Choose the date and time to replay from.')
      since.focus()
      return
    }
    void busy(replay, async () => {
      const result = await api.replay(id, from.toISOString())
      if (result.kind === 'aborted') return
      if (result.kind !== 'ok') return replayError.show(refusalText(result.error))
      replayError.clear()
      const { queued, until } = result.body.replay
      replayResult.textContent =
        `${queued === 1 ? '1 message' : `${queued} messages`} queued.` + (until ? ` The replay stopped at its limit: replay again from ${timeText(until)} for the rest.` : '')
      resetSince()
      await deliveries.refresh()
    })
  })
  const replaySection = h(
    'section',
    { class: 'wp-section', 'aria-labelledby': replayHeading },
    h('h3', { id: replayHeading, class: 'wp-h3' }, 'Replay events'),
    h('p', { class: 'wp-hint' }, `Sends again, to this endpoint, every event it receives that happened since then (at most ${REPLAY_WINDOW_DAYS} days ago).`),
    replayForm,
    replayError.element,
    replayResult,
  )

  sections.append(secretSection, h('div', { class: 'wp-columns' }, testSection, replaySection), deliveries.element)

  void api.endpoint(id).then(async (result) => {
    if (result.kind === 'aborted') return
    if (result.kind !== 'ok') {
      heading.textContent = 'Endpoint'
      error.show(refusalText(result.error))
      return
    }
    showSummary(result.body.endpoint)
    sections.hidden = false
    await deliveries.refresh()
  })
  return { element, focus: heading }
}
