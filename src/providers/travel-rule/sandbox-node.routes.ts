import Type, { type Static } from 'typebox'
import { ApiError } from '../../http/errors.ts'
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
type ValidateBody = Static<typeof ValidateBody>

const AddressParams = Type.Object({ network: Type.String({ minLength: 1, maxLength: 64 }), address: Type.String({ minLength: 1, maxLength: 128 }) })

/** The IVMS 101 person of the other party; none for the user themself when Tessera knows no name for them. */
function ivmsPerson(party: ValidateBody['counterparty'], customer: ValidateBody['customer']) {
  if (party.type === 'self' && customer.name.trim() === '') return undefined
  if (party.type === 'legal' || (party.type === 'self' && customer.type === 'legal')) {
    const name = party.type === 'legal' ? party.name : customer.name
    return { legalPerson: { name: { nameIdentifier: [{ legalPersonName: name, legalPersonNameIdentifierType: 'LEGL' }] } } }
  }
  if (party.type === 'natural') return { naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: party.lastName, secondaryIdentifier: party.firstName, nameIdentifierType: 'LEGL' }] } } }
  // The user themself: the customer's name as one identifier (Tessera holds the parts).
  return { naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: customer.name, nameIdentifierType: 'LEGL' }] } } }
}

export function sandboxTravelRuleNodeRoutes(node: SandboxTravelRuleNode) {
  return async function routes(app: App): Promise<void> {
    const customerOf = (authorization: string | undefined) => {
      const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : undefined
      const customer = token !== undefined ? node.readCustomerToken(token) : null
      if (!customer) throw new ApiError(401, 'token_invalid', 'The travel-rule node does not know this customer token')
      return customer
    }

    app.get<{ Params: Static<typeof AddressParams> }>('/sandbox/travel-rule-node/addresses/:network/:address', { schema: { hide: true, params: AddressParams } }, async (request) => {
      customerOf(request.headers.authorization)
      const { network, address } = request.params
      return { network, address, vasp: await node.lookup(network, address) }
    })

    app.post<{ Body: ValidateBody }>('/sandbox/travel-rule-node/transfers/validate', { schema: { hide: true, body: ValidateBody } }, async (request) => {
      customerOf(request.headers.authorization)
      const body = request.body
      const vasp = await node.lookup(body.network, body.address)
      const self = body.counterparty.type === 'self'
      const errors: string[] = []
      if (self && body.proof === undefined) errors.push('A transfer to or from the user\'s own wallet needs a proof that they control it')
      if (body.proof !== undefined && 'confirmed' in body.proof && !body.proof.confirmed) errors.push('The self-declaration was not confirmed')
      const person = ivmsPerson(body.counterparty, body.customer)
      const side = person === undefined ? undefined : body.direction === 'deposit' ? { originator: { originatorPersons: [person] } } : { beneficiary: { beneficiaryPersons: [person] } }
      const counterpartyName = body.counterparty.type === 'natural' ? `${body.counterparty.firstName} ${body.counterparty.lastName}` : body.counterparty.type === 'legal' ? body.counterparty.name : body.customer.name
      return {
        valid: errors.length === 0,
        errors,
        status: errors.length === 0 ? 'verified' : 'pending',
        value: {
          amountDecimal: body.amountDecimal,
          asset: body.asset,
          network: body.network,
          [body.direction === 'deposit' ? 'source' : 'destination']: body.address,
          counterparty: { name: counterpartyName, type: self ? 'self' : body.counterparty.type, ...(vasp ? { vasp } : {}) },
        },
        ...(side !== undefined ? { ivms101: side } : {}),
        originatorEqualsBeneficiary: self,
        ...(vasp ? { [body.direction === 'deposit' ? 'originatorVASPdid' : 'beneficiaryVASPdid']: vasp.did } : {}),
        ...(body.proof !== undefined ? { proof: { ...body.proof, address: body.address } } : {}),
      }
    })
  }
}
