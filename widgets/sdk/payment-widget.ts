/**
 * The payment widget: picks a card for a deposit or a withdrawal (`select-for-deposit`, `select-for-withdrawal`),
 * or runs a card deposit through 3-D Secure (`authorize`). Same as the upstream `PaymentWidget`
 * (`@uphold/enterprise-payment-widget-web-sdk`).
 *
 * ```ts
 * const widget = new PaymentWidget<'authorize'>(session, { theme: { appearance: 'dark' } })
 * widget.on('complete', (event) => {
 *   const { transaction, trigger } = event.detail.value
 *   widget.unmount()
 * })
 * widget.mountIframe(document.getElementById('payment')!)
 * ```
 */
import { logSymbol, redactToken, Widget } from './widget.ts'
import type { PaymentWidgetEventMap, PaymentWidgetFlow, PaymentWidgetOptions, PaymentWidgetSession } from './types.ts'

export class PaymentWidget<TFlow extends PaymentWidgetFlow = PaymentWidgetFlow> extends Widget<
  PaymentWidgetSession,
  PaymentWidgetEventMap<TFlow>,
  PaymentWidgetOptions
> {
  static override readonly widgetName: string = 'PaymentWidget'

  constructor(session: PaymentWidgetSession, options?: PaymentWidgetOptions) {
    super(session, options)
    this[logSymbol].log('Initialized payment widget. session: ', redactToken(session), ' options: ', options)
  }

  /** The frame may also use the Payment Request API (Apple Pay, Google Pay). */
  protected override getIframeAllowAttribute(): string {
    return `${super.getIframeAllowAttribute()} payment 'src';`
  }
}
