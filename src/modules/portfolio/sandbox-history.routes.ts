import Type, { type Static } from 'typebox'
import { ActingRequestHeaders, component, described, errorResponses, Timestamp, Uuid } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import type { SandboxHistory } from './sandbox-history.ts'

export const GenerateHistoryBody = component(
  'generate-portfolio-history-request',
  Type.Object(
    {
      months: Type.Optional(Type.Integer({ minimum: 1, maximum: 24, default: 6, description: 'How many months of activity, ending now.' })),
      seed: Type.Optional(Type.Integer({
        minimum: 0,
        maximum: 4_294_967_295,
        description: 'Chooses the activity: the same seed gives the same movements and amounts on the same day. A random one when not given (the answer tells which).',
      })),
    },
    { additionalProperties: false },
  ),
)
export type GenerateHistoryBody = Static<typeof GenerateHistoryBody>

export const GenerateHistoryResponse = component(
  'generate-portfolio-history-response',
  Type.Object({
    history: Type.Object(
      {
        from: { ...Timestamp, description: 'When the history begins: the user is now created then.' },
        to: { ...Timestamp, description: 'When it was generated: the activity runs to the end of the day before.' },
        seed: Type.Integer({ description: 'The seed used: give it again to generate the same history for another user.' }),
        transactions: Type.Integer({ minimum: 0, description: 'How many completed transactions were recorded.' }),
        accounts: Type.Array(
          Type.Object({ id: { ...Uuid, description: 'The account.' }, asset: Type.String({ description: 'Its asset.' }) }),
          { description: 'The user\'s default accounts the history moved money in (opened when missing).' },
        ),
      },
      { description: 'What was generated.' },
    ),
  }),
)

/** Sandbox only: app.ts registers this route in sandbox, so in production it answers 404 `route_not_found`. */
export function sandboxHistoryRoutes(history: SandboxHistory) {
  return async function routes(app: App): Promise<void> {
    app.post(
      '/core/portfolio/test-helpers/history',
      {
        schema: {
          operationId: 'core.generate-portfolio-history',
          summary: 'Generate portfolio history',
          description:
            'Sandbox only: months of realistic activity for the acting user, ending now — USD bank deposits (ACH) about every two ' +
            'weeks, buys of BTC and ETH with them, some partial sales, a few small BTC withdrawals — priced from the sandbox price ' +
            'feed at each moment and recorded as completed transactions with their ledger movements, dated then, so that balance ' +
            'history, performance and monthly statements have something to show. The user\'s creation moves back to the start. ' +
            '409 `operation_not_allowed` (`user-has-transactions`) for a user who has any transaction: the history must be the beginning of their accounts.',
          tags: ['Portfolio'],
          headers: ActingRequestHeaders,
          body: GenerateHistoryBody,
          response: { 201: described(GenerateHistoryResponse, 'History generated.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { scopes: ['core.accounts:use-test-helpers'], subjects: ['user:business', 'user:individual'] as const } },
      },
      async (request, reply) => reply.status(201).send({ history: await history.generate(principalOf(request), request.body) }),
    )
  }
}
