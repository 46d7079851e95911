export { TRAVEL_RULE_FAILED, RequestsForInformationService, presentRequest, type RequestContext, type MessageSignatureCheck } from './travel-rule.service.ts'
export { travelRuleRoutes } from './travel-rule.routes.ts'
export { DEFAULT_TRAVEL_RULE, needsTravelRule, thresholdUsd, type TravelRuleRules } from './travel-rule.policy.ts'
export { RequestForInformation, RequestForInformationResponse } from './travel-rule.schemas.ts'
