/**
 * The KYC widget: walks the user through the verification processes of the session (`identity`,
 * `proof-of-address`, `profile`). Same as the upstream `KycWidget` (`@uphold/enterprise-kyc-widget-web-sdk`).
 */
import { logSymbol, redactToken, Widget } from './widget.ts'
import type { KycWidgetEventMap, KycWidgetOptions, KycWidgetSession } from './types.ts'

export class KycWidget extends Widget<KycWidgetSession, KycWidgetEventMap, KycWidgetOptions> {
  static override readonly widgetName: string = 'KycWidget'

  constructor(session: KycWidgetSession, options?: KycWidgetOptions) {
    super(session, options)
    this[logSymbol].log('Initialized kyc widget. session: ', redactToken(session), ' options: ', options)
  }
}
