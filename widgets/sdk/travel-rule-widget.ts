/**
 * The travel-rule widget: the originator/beneficiary form of a crypto deposit (`deposit-form`) or withdrawal
 * (`withdrawal-form`). Same as the upstream `TravelRuleWidget` (`@uphold/enterprise-travel-rule-widget-web-sdk`).
 */
import { logSymbol, redactToken, Widget } from './widget.ts'
import type { TravelRuleWidgetEventMap, TravelRuleWidgetFlow, TravelRuleWidgetOptions, TravelRuleWidgetSession } from './types.ts'

export class TravelRuleWidget<TFlow extends TravelRuleWidgetFlow = TravelRuleWidgetFlow> extends Widget<
  TravelRuleWidgetSession,
  TravelRuleWidgetEventMap<TFlow>,
  TravelRuleWidgetOptions
> {
  static override readonly widgetName: string = 'TravelRuleWidget'

  constructor(session: TravelRuleWidgetSession, options?: TravelRuleWidgetOptions) {
    super(session, options)
    this[logSymbol].log('Initialized travel rule widget. session: ', redactToken(session), ' options: ', options)
  }
}
