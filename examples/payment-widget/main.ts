/// <reference lib="dom" />
/**
 * An example merchant page for the sandbox (`GET /examples/payment-widget/`): it gets a client token, creates a verified
 * user with an EUR account, lets the user pick or add a card in the payment widget (`select-for-deposit`), then quotes a
 * card deposit and has the widget authorize it (`authorize`, with 3-D Secure when the card asks for it).
 *
 * A real merchant keeps its client credentials on its server and creates widget sessions there: this page does it in
 * the browser only to show the whole flow on one page. The credentials and the token stay in memory.
 */
import './style.css'
import { PaymentWidget } from '../../widgets/sdk/index.ts'

type WidgetSession = ConstructorParameters<typeof PaymentWidget>[0]
type EventName = 'ready' | 'complete' | 'cancel' | 'error'

interface Quote {
  id: string
  origin: { asset: string; amount: string }
  destination: { asset: string; amount: string }
  fees: { type: string; asset: string; amount: string }[]
  requirements: string[]
  expiresAt: string
}

/** An answer of the API other than 2xx, with its error body. */
class RequestFailed extends Error {
  readonly status: number
  readonly code: string
  readonly details: unknown

  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
  }
}

const API_BASE = (document.querySelector<HTMLMetaElement>('meta[name="tessera-api-base"]')?.content || location.origin).replace(/\/+$/, '')
/** The end user's IP for `POST /core/users` (which requires one): a documentation address, as this is the sandbox. */
const EXAMPLE_USER_IP = '203.0.113.7'

/** The same person as test/money.ts verifiedUser: lives in France, verified electronically. */
const ELECTRONIC_IDENTITY = {
  type: 'electronic-verification',
  input: { data: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', citizenshipCountry: 'FR' } },
}
const ELECTRONIC_PROOF_OF_ADDRESS = {
  type: 'electronic-verification',
  input: { data: { givenName: 'John', familyName: 'Doe', address: { country: 'FR', city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } },
}
const DUE_DILIGENCE_ANSWERS = [
  { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
  { 'financial-information': { 'source-of-funds': 'salary', 'annual-income-range': '40000-60000-GBP', 'expected-annual-deposits-range': '0-5000-GBP' } },
  { employment: { status: 'employed' } },
]

// ---- DOM ----------------------------------------------------------------------------------------------------------

type Child = Node | string | null | undefined | false

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Record<string, string | boolean | undefined> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    element.setAttribute(name, value === true ? '' : value)
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    element.append(typeof child === 'string' ? document.createTextNode(child) : child)
  }
  return element
}

function field(id: string, label: string, attributes: Record<string, string | boolean | undefined> = {}): { row: HTMLElement; input: HTMLInputElement } {
  const input = h('input', { id, name: id, type: 'text', spellcheck: 'false', autocomplete: 'off', ...attributes })
  return { row: h('div', { class: 'ex-field' }, h('label', { for: id }, label), input), input }
}

function button(id: string, text: string): HTMLButtonElement {
  return h('button', { id, type: 'button' }, text)
}

const clientId = field('client-id', 'Client id')
const clientSecret = field('client-secret', 'Client secret', { type: 'password', autocomplete: 'off' })
const connectButton = button('connect', 'Connect')
const userId = field('user-id', 'User id')
const createUserButton = button('create-user', 'Create a verified sandbox user')
const accountId = field('account-id', 'EUR account id')
const cardId = field('card-id', 'Card (external account) id')
const chooseCardButton = button('choose-card', 'Choose or add a card')
const amount = field('amount', 'Amount', { value: '25.00', inputmode: 'decimal' })
const asset = field('asset', 'Asset', { value: 'EUR' })
const payButton = button('pay', 'Pay with the card')
const setupStatus = h('p', { id: 'setup-status', class: 'ex-status', role: 'status', 'aria-live': 'polite' })
const quoteView = h('div', { id: 'quote', class: 'ex-quote', 'aria-live': 'polite' })
const widgetContainer = h('div', { id: 'widget', class: 'ex-widget' })
const events = h('ul', { id: 'events', class: 'ex-events', 'aria-live': 'polite' })
const balance = h('p', { id: 'balance', class: 'ex-balance', 'aria-live': 'polite' })

function code(text: string): HTMLElement {
  return h('code', {}, text)
}

function render(): void {
  const app = document.getElementById('app') ?? document.body
  app.replaceChildren(
    h(
      'main',
      { class: 'ex' },
      h('h1', {}, 'Tessera payment widget — example merchant page'),
      h(
        'section',
        { class: 'ex-explainer' },
        h(
          'p',
          {},
          'This page plays a merchant in the sandbox: it connects with a client, creates a verified user with an EUR account, lets the user choose or add a card in the payment widget, then pays into the account from the card, with the widget handling 3-D Secure. A real merchant keeps its client secret on its server; this page keeps it in memory only.',
        ),
        h(
          'ul',
          {},
          h('li', {}, code('4242 4242 4242 4242'), ' authorizes without 3-D Secure.'),
          h('li', {}, code('4000 0000 0000 3220'), ' asks for a 3-D Secure challenge.'),
          h('li', {}, 'Any future expiry date and any 3-digit security code but ', code('000'), '. The other sandbox cards (declines, countries, credit cards) are listed in ', code('docs/sandbox.md'), '.'),
        ),
      ),
      h(
        'section',
        { class: 'ex-card', 'aria-labelledby': 'setup-title' },
        h('h2', { id: 'setup-title' }, '1. Set up'),
        h('div', { class: 'ex-grid' }, clientId.row, clientSecret.row),
        h('div', { class: 'ex-actions' }, connectButton),
        h('div', { class: 'ex-grid' }, userId.row, accountId.row),
        h('div', { class: 'ex-actions' }, createUserButton),
        setupStatus,
      ),
      h(
        'section',
        { class: 'ex-card', 'aria-labelledby': 'card-title' },
        h('h2', { id: 'card-title' }, '2. Choose a card'),
        h('div', { class: 'ex-grid' }, cardId.row),
        h('div', { class: 'ex-actions' }, chooseCardButton),
      ),
      h(
        'section',
        { class: 'ex-card', 'aria-labelledby': 'pay-title' },
        h('h2', { id: 'pay-title' }, '3. Pay'),
        h('div', { class: 'ex-grid' }, amount.row, asset.row),
        h('div', { class: 'ex-actions' }, payButton),
        quoteView,
      ),
      h('section', { class: 'ex-card ex-widget-card', 'aria-labelledby': 'widget-title' }, h('h2', { id: 'widget-title' }, 'Widget'), widgetContainer),
      h('section', { class: 'ex-card', 'aria-labelledby': 'events-title' }, h('h2', { id: 'events-title' }, 'Events'), events, balance),
    ),
  )
}

// ---- API ----------------------------------------------------------------------------------------------------------

let credentials: { id: string; secret: string } | undefined
let token: { value: string; expiresAt: number } | undefined

async function parse(response: Response): Promise<unknown> {
  const text = await response.text()
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

async function fetchToken(): Promise<string> {
  if (!credentials) throw new Error('Connect with a client id and secret first.')
  const response = await fetch(`${API_BASE}/core/oauth2/token`, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${btoa(`${credentials.id}:${credentials.secret}`)}`,
      'Content-Type': 'application/x-www-form-urlencoded',
      Accept: 'application/json',
    },
    body: 'grant_type=client_credentials&scope=*',
  })
  const body = (await parse(response)) as { access_token?: string; expires_in?: number; error?: string; error_description?: string } | undefined
  if (!response.ok || typeof body?.access_token !== 'string') {
    throw new RequestFailed(response.status, body?.error ?? 'token_request_failed', body?.error_description ?? `The token request answered ${response.status}`)
  }
  const lifetime = typeof body.expires_in === 'number' ? body.expires_in * 1000 : 5 * 60 * 1000
  token = { value: body.access_token, expiresAt: Date.now() + lifetime - 30_000 }
  return token.value
}

async function accessToken(): Promise<string> {
  return token && token.expiresAt > Date.now() ? token.value : fetchToken()
}

/** Calls the API with the client's token, for the user when `onBehalfOf` is given; returns the JSON body of a 2xx. */
async function api<T>(method: string, path: string, options: { body?: unknown; onBehalfOf?: string; headers?: Record<string, string> } = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', Authorization: `Bearer ${await accessToken()}`, ...options.headers }
  if (options.body !== undefined) headers['Content-Type'] = 'application/json'
  if (options.onBehalfOf) headers['X-On-Behalf-Of'] = `user ${options.onBehalfOf}`
  const response = await fetch(`${API_BASE}${path}`, { method, headers, body: options.body === undefined ? null : JSON.stringify(options.body) })
  const body = (await parse(response)) as { code?: string; message?: string; details?: unknown } | undefined
  if (!response.ok) {
    throw new RequestFailed(response.status, body?.code ?? 'http_error', body?.message ?? `${method} ${path} answered ${response.status}`, body?.details)
  }
  return body as T
}

function describe(error: unknown): string {
  if (error instanceof RequestFailed) {
    const details = error.details === undefined ? '' : ` ${JSON.stringify(error.details)}`
    return `${error.status} ${error.code}: ${error.message}${details}`
  }
  if (error instanceof Error) return error.message
  return String(error)
}

function status(text: string): void {
  setupStatus.textContent = text
}

/** Runs a button's action with the button disabled; its failure is shown in #setup-status. */
function action(target: HTMLButtonElement, run: () => Promise<void>): void {
  target.addEventListener('click', () => {
    if (target.disabled) return
    target.disabled = true
    run()
      .catch((error: unknown) => status(`Failed: ${describe(error)}`))
      .finally(() => {
        target.disabled = false
      })
  })
}

function required(input: HTMLInputElement, what: string): string {
  const value = input.value.trim()
  if (value === '') throw new Error(`Fill in ${what} first.`)
  return value
}

// ---- The widget ---------------------------------------------------------------------------------------------------

let widget: PaymentWidget | undefined

function unmountWidget(): void {
  const current = widget
  widget = undefined
  try {
    current?.unmount()
  } catch {
    // Already gone.
  }
  widgetContainer.replaceChildren()
}

function logEvent(name: EventName, detail: unknown): void {
  const pre = h('pre', {}, JSON.stringify(detail ?? null, null, 2))
  events.append(h('li', { 'data-event': name }, pre))
}

async function showBalance(): Promise<void> {
  const account = accountId.input.value.trim()
  const user = userId.input.value.trim()
  if (account === '' || user === '') return
  const { account: read } = await api<{ account: { asset: string; balance: { total: string; available: string } } }>('GET', `/core/accounts/${encodeURIComponent(account)}`, { onBehalfOf: user })
  balance.dataset.total = read.balance.total
  balance.dataset.available = read.balance.available
  balance.textContent = `Balance of the account: ${read.balance.total} ${read.asset} (available: ${read.balance.available} ${read.asset})`
}

/** Mounts the widget for a session; `onComplete` reads the complete event's value. */
function mount(session: WidgetSession, onComplete: (value: unknown) => void): void {
  unmountWidget()
  const current = new PaymentWidget(session, { debug: true })
  const terminal = () => {
    if (widget !== current) return
    unmountWidget()
    showBalance().catch((error: unknown) => status(`Failed to read the balance: ${describe(error)}`))
  }
  current.on('ready', (event: Event) => logEvent('ready', (event as CustomEvent).detail))
  current.on('complete', (event: Event) => {
    const detail = (event as CustomEvent<{ value?: unknown } | null>).detail
    logEvent('complete', detail)
    try {
      onComplete(detail?.value)
    } finally {
      terminal()
    }
  })
  current.on('cancel', (event: Event) => {
    logEvent('cancel', (event as CustomEvent).detail)
    terminal()
  })
  current.on('error', (event: Event) => {
    logEvent('error', (event as CustomEvent).detail)
    terminal()
  })
  widget = current
  current.mountIframe(widgetContainer)
}

// ---- Actions ------------------------------------------------------------------------------------------------------

action(connectButton, async () => {
  const id = required(clientId.input, 'the client id')
  const secret = required(clientSecret.input, 'the client secret')
  credentials = { id, secret }
  token = undefined
  status('Connecting…')
  try {
    await fetchToken()
  } catch (error) {
    credentials = undefined
    throw error
  }
  status('Connected.')
})

action(createUserButton, async () => {
  status('Creating the user…')
  const email = `example-${Array.from(crypto.getRandomValues(new Uint8Array(5)), (byte) => byte.toString(16).padStart(2, '0')).join('')}@example.com`
  const { user } = await api<{ user: { id: string } }>('POST', '/core/users', {
    body: { type: 'individual', email, termsOfService: 'general-lt-fcs', primaryCitizenship: 'FR', address: { country: 'FR' } },
    headers: { 'X-Service-User-Ip': EXAMPLE_USER_IP },
  })
  userId.input.value = user.id
  const kyc = (process: string, body: Record<string, unknown>) => api('PATCH', `/core/kyc/processes/${process}`, { body, onBehalfOf: user.id })
  status('Verifying the user (KYC)…')
  await kyc('address', { input: { address: { city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } })
  await kyc('identity', ELECTRONIC_IDENTITY)
  await kyc('proof-of-address', ELECTRONIC_PROOF_OF_ADDRESS)
  for (const answers of DUE_DILIGENCE_ANSWERS) await kyc('customer-due-diligence', { input: { answers } })
  status('Opening an EUR account…')
  const { account } = await api<{ account: { id: string } }>('POST', '/core/accounts', { body: { label: 'My EUR', asset: 'EUR' }, onBehalfOf: user.id })
  accountId.input.value = account.id
  status(`Created the verified user ${user.id} with the EUR account ${account.id}.`)
})

action(chooseCardButton, async () => {
  const user = required(userId.input, 'the user id')
  status('Opening the widget to choose a card…')
  const { session } = await api<{ session: WidgetSession }>('POST', '/widgets/payment/sessions', { body: { flow: 'select-for-deposit', data: {} }, onBehalfOf: user })
  mount(session, (value) => {
    const selection = (value as { selection?: { id?: unknown } } | undefined)?.selection
    if (typeof selection?.id === 'string') cardId.input.value = selection.id
  })
  status('Choose or add a card in the widget.')
})

action(payButton, async () => {
  const user = required(userId.input, 'the user id')
  const account = required(accountId.input, 'the account id')
  const card = required(cardId.input, 'the card id')
  const denomination = { asset: required(asset.input, 'the asset'), amount: required(amount.input, 'the amount'), target: 'origin' }
  status('Quoting the payment…')
  quoteView.replaceChildren()
  delete quoteView.dataset.quoteId
  const { quote } = await api<{ quote: Quote }>('POST', '/core/transactions/quote', {
    body: { origin: { type: 'external-account', id: card }, destination: { type: 'account', id: account }, denomination },
    onBehalfOf: user,
  })
  quoteView.dataset.quoteId = quote.id
  const fees = quote.fees.length === 0 ? 'none' : quote.fees.map((fee) => `${fee.amount} ${fee.asset} (${fee.type})`).join(', ')
  quoteView.append(
    h('p', {}, `You pay ${quote.origin.amount} ${quote.origin.asset} from the card; the account receives ${quote.destination.amount} ${quote.destination.asset}. Fees: ${fees}.`),
    h('p', {}, `Requirements: ${quote.requirements.length === 0 ? 'none' : quote.requirements.join(', ')}. Valid until ${quote.expiresAt}.`),
  )
  status('Opening the widget to authorize the payment…')
  const { session } = await api<{ session: WidgetSession }>('POST', '/widgets/payment/sessions', {
    body: { flow: 'authorize', data: { domain: location.hostname, quoteId: quote.id, requirements: quote.requirements } },
    onBehalfOf: user,
  })
  mount(session, () => {})
  status('Authorize the payment in the widget.')
})

render()
