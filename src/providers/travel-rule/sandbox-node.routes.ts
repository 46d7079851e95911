import Type, { type Static } from 'typebox'
import type { App } from '../../http/types.ts'
import type { SandboxTravelRuleNode } from './sandbox.ts'

/**
 * The sandbox travel-rule node's own API, at the `nodeUrl` widget sessions hand out (`/sandbox/travel-rule-node`):
 * what the travel-rule widget's page asks the network while the user fills the form. It authenticates with the
 * session's customer token (`parameters.init.authToken`), never with a Tessera token. Not part of Tessera's API
 * document: it stands in for an outside party.
 *
 * - `GET /addresses/{network}/{address}` — whether the directory knows a service (a VASP) that hosts the address.
 * - `POST /transfers/validate` — turns what the form collected into the network's description of the transfer (IVMS
 *   101 persons, the ownership proof, the VASPs involved): the `data` the page then answers the request with.
 */

const Person = Type.Union([
  Type.Object({ type: Type.Literal('self') }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('natural'), firstName: Type.String({ minLength: 1, maxLength: 100 }), lastName: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('legal'), name: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
])

const Proof = Type.Union([
  Type.Object({ type: Type.Literal('self-declaration'), confirmed: Type.Boolean() }, { additionalProperties: false }),
  Type.Object(
    { type: Type.String({ minLength: 1, maxLength: 32 }), attestation: Type.String({ minLength: 1, maxLength: 2000 }), proof: Type.String({ minLength: 1, maxLength: 10_000 }), publicKey: Type.Optional(Type.String({ maxLength: 200 })) },
    { additionalProperties: false },
  ),
])

/** The form as the route validates it: the widget's `ValidateRequest` (widgets/travel-rule-widget/types.ts). */
const ValidateBody = Type.Object(
  {
    direction: Type.Union([Type.Literal('deposit'), Type.Literal('withdrawal')]),
    network: Type.String({ minLength: 1, maxLength: 64 }),
    asset: Type.String({ minLength: 1, maxLength: 16 }),
    amountDecimal: Type.Number({ minimum: 0 }),
    address: Type.String({ minLength: 1, maxLength: 128 }),
    customer: Type.Object({ name: Type.String({ maxLength: 200 }), type: Type.Union([Type.Literal('natural'), Type.Literal('legal')]) }),
    counterparty: Person,
    proof: Type.Optional(Proof),
  },
  { additionalProperties: false },
)

const AddressParams = Type.Object({ network: Type.String({ minLength: 1, maxLength: 64 }), address: Type.String({ minLength: 1, maxLength: 128 }) })

export function sandboxTravelRuleNodeRoutes(node: SandboxTravelRuleNode) {
  return async function routes(app: App): Promise<void> {
    app.get<{ Params: Static<typeof AddressParams> }>('/sandbox/travel-rule-node/addresses/:network/:address', { schema: { hide: true, params: AddressParams } }, async (request) => {
      node.authenticate(request.headers.authorization)
      const { network, address } = request.params
      return { network, address, vasp: await node.lookup(network, address) }
    })

    app.post<{ Body: Static<typeof ValidateBody> }>('/sandbox/travel-rule-node/transfers/validate', { schema: { hide: true, body: ValidateBody } }, async (request) => {
      node.authenticate(request.headers.authorization)
      return node.describeTransfer(request.body)
    })
  }
}
