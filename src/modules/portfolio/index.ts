/**
 * Portfolio: positions and their cost basis, kept as money moves (tables `portfolio_*`), performance, balance
 * history and statements.
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { portfolioRoutes } from './portfolio.routes.ts'
export { PortfolioService } from './portfolio.service.ts'
export { SandboxHistory } from './sandbox-history.ts'
export { sandboxHistoryRoutes } from './sandbox-history.routes.ts'
export { statementsRoutes } from './statements.routes.ts'
export { StatementsService } from './statements.service.ts'
