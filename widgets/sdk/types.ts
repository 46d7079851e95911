/// <reference lib="dom" />
/**
 * Types of Tessera's widget SDK: sessions, options, the messages exchanged with the widget frame and the events a
 * widget emits. They follow the shapes the upstream `@uphold/enterprise-*-widget-web-sdk` packages use (names
 * included), so that an app written against those packages type-checks after changing its import.
 *
 * The upstream packages take these shapes from a separate package (`@uphold/enterprise-widget-messaging-types`)
 * that is not public; the definitions here are our own, written from the upstream SDK's code, its tests, its
 * READMEs and Tessera's API.
 */

// ---------------------------------------------------------------------------------------------------------------
// Sessions

/**
 * A widget session, as the create-session endpoint returns it (`{ session: {...} }`). Hand it to the widget as
 * received: the SDK reads `url` and forwards the whole object to the widget frame in the `init` message.
 */
export interface WidgetSession {
  /** The page the widget frame loads. Only messages from this URL's origin are accepted. */
  url: string
  /** The session's credential. It reaches the frame in the `init` message only, never in the URL. */
  token: string
  /** The flow the session was opened for. */
  flow?: string
  /** What the session was opened with. */
  data?: Record<string, unknown>
}

export type PaymentWidgetFlow = 'authorize' | 'select-for-deposit' | 'select-for-withdrawal'

export interface PaymentWidgetSessionData {
  /** `authorize`: the quote the widget executes. */
  quoteId?: string
  /** The host page's hostname the session is bound to (Apple Pay and Tessera's domain check). */
  domain?: string
  /** `authorize`: the quote's requirements, passed through. */
  requirements?: string[]
  [key: string]: unknown
}

export interface PaymentWidgetSession extends WidgetSession {
  flow: PaymentWidgetFlow
  data?: PaymentWidgetSessionData
}

export type TravelRuleWidgetFlow = 'deposit-form' | 'withdrawal-form'

export interface TravelRuleWidgetSessionData {
  /** `deposit-form`: the request for information the form answers. */
  requestForInformationId?: string
  /** `withdrawal-form`: the quote the form is for. */
  quoteId?: string
  [key: string]: unknown
}

export interface TravelRuleWidgetSession extends WidgetSession {
  flow: TravelRuleWidgetFlow
  data?: TravelRuleWidgetSessionData
}

export type KycWidgetProcess = 'identity' | 'proof-of-address' | 'profile'

export interface KycWidgetSession extends WidgetSession {
  /** `verify` */
  flow?: string
  data?: { processes?: KycWidgetProcess[]; [key: string]: unknown }
}

// ---------------------------------------------------------------------------------------------------------------
// Options

export type WidgetThemeAppearance = 'light' | 'dark'

/** A colour: one value for both appearances, or one per appearance. */
export type WidgetThemeColor = string | { dark?: string; light?: string }

export interface WidgetThemeComponent {
  borderRadius?: string
}

/**
 * The widget's look. Only `appearance` is read by the SDK itself (it is added to the frame's URL as
 * `theme_appearance`, so the first paint already has it); the whole object is forwarded in `init.options`.
 */
export interface WidgetThemeOption {
  appearance?: WidgetThemeAppearance
  background?: WidgetThemeColor
  foreground?: WidgetThemeColor
  primary?: WidgetThemeColor
  primaryForeground?: WidgetThemeColor
  emphasisForeground?: WidgetThemeColor
  fontFamily?: string
  components?: {
    button?: WidgetThemeComponent
    card?: WidgetThemeComponent
    input?: WidgetThemeComponent
  }
}

/**
 * How the widget lays itself out in its frame: `boxed` (the default: a centred card on wide viewports) or
 * `fluid` (full-bleed, the host's container is the frame).
 */
export type WidgetLayout = 'boxed' | 'fluid'

/** Options of every widget. They are forwarded to the widget frame in `init.options`, so they must be plain data. */
export interface WidgetOptions {
  /** Log what the SDK does to the console, prefixed with the class name (`[PaymentWidget] `). Silent otherwise. */
  debug?: boolean
  layout?: WidgetLayout
  theme?: WidgetThemeOption
}

export type PaymentMethodType = 'card' | 'crypto' | 'bank'

export interface PaymentMethodOption {
  type: PaymentMethodType
}

export interface PaymentWidgetOptions extends WidgetOptions {
  /** The payment methods the widget offers; all of those it supports when absent. */
  paymentMethods?: PaymentMethodOption[]
}

export type TravelRuleWidgetOptions = WidgetOptions

export type KycWidgetOptions = WidgetOptions

/** Reserved by `mountIframe(element, mountOptions)`: stored on the widget, not used. */
export type WidgetMountIframeOptions = Record<string, unknown>

// ---------------------------------------------------------------------------------------------------------------
// Shapes carried by events (Tessera's API objects, as the widget reports them)

export interface TransactionEndpoint {
  asset: string
  amount: string
  rate?: string
  node: { type: string; id?: string; [key: string]: unknown }
  [key: string]: unknown
}

export type TransactionStatus = 'processing' | 'on-hold' | 'completed' | 'failed'

export interface Transaction {
  id: string
  type?: string
  status: TransactionStatus
  statusDetails?: { reason?: string; [key: string]: unknown }
  origin: TransactionEndpoint
  destination: TransactionEndpoint
  denomination?: { asset: string; amount: string; rate?: string; target: 'origin' | 'destination' }
  fees?: { type: string; code: string; asset: string; amount: string; percentage?: string }[]
  quotedAt?: string
  createdAt: string
  updatedAt: string
  completedAt?: string
  [key: string]: unknown
}

export interface ExternalAccount {
  id: string
  ownerId?: string
  type: string
  status: string
  statusDetails?: { reason: string }
  label: string
  asset: string
  network: string
  features: ('deposit' | 'withdraw')[]
  details: Record<string, unknown>
  createdAt: string
  updatedAt: string
  [key: string]: unknown
}

export interface Account {
  id: string
  ownerId?: string
  label?: string
  asset?: string
  [key: string]: unknown
}

export interface AccountDepositMethod {
  [key: string]: unknown
}

/** `authorize`: the outcome of the payment. */
export interface AuthorizeResult {
  transaction: Transaction
  /**
   * Why the widget reported: the transaction reached a final status (`transaction-status-changed`: read
   * `transaction.status`), or the widget stopped waiting for it (`max-retries-reached`: it may still complete).
   */
  trigger: { reason: 'transaction-status-changed' | 'max-retries-reached' }
}

/** A `select-for-*` flow ended with an external account (a card) picked or added. */
export interface ExternalAccountSelection {
  via: 'external-account'
  selection: ExternalAccount
}

/** A `select-for-deposit` flow ended with an account's deposit method. Not emitted by Tessera's widget today. */
export interface AccountDepositMethodSelection {
  via: 'deposit-method'
  selection: { account: Account; depositMethod: AccountDepositMethod }
}

export type DepositSelection = ExternalAccountSelection | AccountDepositMethodSelection
export type WithdrawalSelection = ExternalAccountSelection

/** What `complete` carries in `detail.value`, per payment flow. */
export interface PaymentWidgetResults {
  authorize: AuthorizeResult
  'select-for-deposit': DepositSelection
  'select-for-withdrawal': WithdrawalSelection
}

export interface WidgetError {
  /** A stable, machine-readable code (Tessera's API error codes, or the widget's own such as `session_invalid`). */
  code: string
  message?: string
  details?: Record<string, unknown>
  name?: string
}

// ---------------------------------------------------------------------------------------------------------------
// Messages (postMessage between the host page and the widget frame)

/** Host → widget, in answer to `load`: the session spread at the top level, the options, and `type: 'init'`. */
export type WidgetInitMessage<TSession extends WidgetSession = WidgetSession, TOptions extends WidgetOptions = WidgetOptions> = TSession & {
  options: TOptions | undefined
  type: 'init'
}

export type WidgetMessageType = 'load' | 'ready' | 'complete' | 'cancel' | 'error' | 'force_repaint'

/** Widget → host. Any other `type` is ignored. */
export type WidgetMessage =
  | { type: 'load' }
  | { type: 'ready' }
  | { type: 'complete'; value?: unknown; [key: string]: unknown }
  | { type: 'cancel' }
  | { type: 'error'; error: WidgetError }
  | { type: 'force_repaint' }

// ---------------------------------------------------------------------------------------------------------------
// Events (CustomEvent emitted by a widget; `detail` as below)

export type WidgetEventType = 'ready' | 'complete' | 'cancel' | 'error'

/** `complete`: the widget's whole message, `type` included. */
export interface WidgetCompleteEventDetail<TValue = unknown> {
  type: 'complete'
  value: TValue
}

/** `error`: the widget's whole message, `type` included. */
export interface WidgetErrorEventDetail {
  type: 'error'
  error: WidgetError
}

/** `ready`: no detail (`null`). */
export type WidgetReadyEvent = CustomEvent<null>
/** `cancel`: no detail (`null`), whatever the message carried. */
export type WidgetCancelEvent = CustomEvent<null>
export type WidgetCompleteEvent<TValue = unknown> = CustomEvent<WidgetCompleteEventDetail<TValue>>
export type WidgetErrorEvent = CustomEvent<WidgetErrorEventDetail>

/** The event each event name delivers. A widget class narrows `complete`. */
export interface WidgetEventMap {
  ready: WidgetReadyEvent
  complete: WidgetCompleteEvent
  cancel: WidgetCancelEvent
  error: WidgetErrorEvent
}

export type WidgetEvent = WidgetEventMap[WidgetEventType]

export type PaymentWidgetCompleteEventDetail<TFlow extends PaymentWidgetFlow = PaymentWidgetFlow> = WidgetCompleteEventDetail<PaymentWidgetResults[TFlow]>
export type PaymentWidgetReadyEvent = WidgetReadyEvent
export type PaymentWidgetCompleteEvent<TFlow extends PaymentWidgetFlow = PaymentWidgetFlow> = CustomEvent<PaymentWidgetCompleteEventDetail<TFlow>>
export type PaymentWidgetCancelEvent = WidgetCancelEvent
export type PaymentWidgetErrorEvent = WidgetErrorEvent
export interface PaymentWidgetEventMap<TFlow extends PaymentWidgetFlow = PaymentWidgetFlow> extends WidgetEventMap {
  complete: PaymentWidgetCompleteEvent<TFlow>
}
export type PaymentWidgetEvent<TFlow extends PaymentWidgetFlow = PaymentWidgetFlow> =
  | PaymentWidgetReadyEvent
  | PaymentWidgetCompleteEvent<TFlow>
  | PaymentWidgetCancelEvent
  | PaymentWidgetErrorEvent

/**
 * What a travel-rule form reports on completion: `value` is the travel-rule network's description of the transfer
 * (the answer the widget sent), `requestForInformation` the request as it now stands (`ok`, or `failed` when the
 * network refused the party). See docs/travel-rule-widget.md.
 */
export type TravelRuleWidgetResult = Record<string, unknown>
export interface TravelRuleWidgetCompleteEventDetail<_TFlow extends TravelRuleWidgetFlow = TravelRuleWidgetFlow> extends WidgetCompleteEventDetail<TravelRuleWidgetResult> {
  requestForInformation?: { id: string; type: 'travel-rule'; status: 'ok' | 'pending' | 'expired' | 'failed'; [field: string]: unknown }
}
export type TravelRuleWidgetReadyEvent = WidgetReadyEvent
export type TravelRuleWidgetCompleteEvent<TFlow extends TravelRuleWidgetFlow = TravelRuleWidgetFlow> = CustomEvent<TravelRuleWidgetCompleteEventDetail<TFlow>>
export type TravelRuleWidgetCancelEvent = WidgetCancelEvent
export type TravelRuleWidgetErrorEvent = WidgetErrorEvent
export interface TravelRuleWidgetEventMap<TFlow extends TravelRuleWidgetFlow = TravelRuleWidgetFlow> extends WidgetEventMap {
  complete: TravelRuleWidgetCompleteEvent<TFlow>
}
export type TravelRuleWidgetEvent<TFlow extends TravelRuleWidgetFlow = TravelRuleWidgetFlow> =
  | TravelRuleWidgetReadyEvent
  | TravelRuleWidgetCompleteEvent<TFlow>
  | TravelRuleWidgetCancelEvent
  | TravelRuleWidgetErrorEvent

export type KycWidgetCompleteEventDetail = WidgetCompleteEventDetail<unknown>
export type KycWidgetReadyEvent = WidgetReadyEvent
export type KycWidgetCompleteEvent = CustomEvent<KycWidgetCompleteEventDetail>
export type KycWidgetCancelEvent = WidgetCancelEvent
export type KycWidgetErrorEvent = WidgetErrorEvent
export interface KycWidgetEventMap extends WidgetEventMap {
  complete: KycWidgetCompleteEvent
}
export type KycWidgetEvent = KycWidgetReadyEvent | KycWidgetCompleteEvent | KycWidgetCancelEvent | KycWidgetErrorEvent
