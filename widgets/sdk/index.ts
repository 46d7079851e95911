/**
 * Tessera's widget SDK: embeds Tessera's hosted widgets in a web page. A drop-in for the upstream
 * `@uphold/enterprise-payment-widget-web-sdk`, `@uphold/enterprise-travel-rule-widget-web-sdk` and
 * `@uphold/enterprise-kyc-widget-web-sdk` packages: change the import, keep the code (docs/widget-sdk.md).
 * No runtime dependencies; Tessera serves this module bundled at `/hosted/assets/sdk.js`.
 */
export { logSymbol, Widget } from './widget.ts'
export { PaymentWidget } from './payment-widget.ts'
export { TravelRuleWidget } from './travel-rule-widget.ts'
export { KycWidget } from './kyc-widget.ts'
export type * from './types.ts'
