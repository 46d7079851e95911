import { DomainError, notFound } from '../../lib/errors.ts'
import { canonicalAddress, validateAddress, type AddressCheck, type AddressFamily, type Chain } from './addresses.ts'
import type { Network, NetworkDefinition } from './networks.schemas.ts'
import { ReferenceDataError } from './reference-data.ts'

/** Networks of the catalogue as this deployment shows them: crypto networks on its chain (test in sandbox). */
export class NetworksService {
  private readonly definitions: ReadonlyMap<string, NetworkDefinition>
  private readonly networks: readonly Network[]
  private readonly chain: Chain

  constructor(definitions: readonly NetworkDefinition[], chain: Chain) {
    const problems: string[] = []
    const byCode = new Map<string, NetworkDefinition>()
    for (const definition of definitions) {
      if (byCode.has(definition.code)) problems.push(`${definition.code}: defined twice`)
      if (definition.type === 'crypto' && (!definition.addressFamily || !definition.chains)) {
        problems.push(`${definition.code}: a crypto network needs addressFamily and chains`)
      }
      if (definition.type === 'crypto' && definition.chains && definition.addressFamily) {
        for (const chain of ['main', 'test'] as const) {
          const check = validateAddress(definition.addressFamily, chain, definition.chains[chain].exampleAddress)
          if (!check.isValid) problems.push(`${definition.code}: the ${chain} example address is not valid (${check.error.message})`)
        }
      }
      byCode.set(definition.code, definition)
    }
    if (problems.length > 0) throw new ReferenceDataError(`Invalid networks:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.definitions = byCode
    this.chain = chain
    this.networks = definitions.map((definition) => this.present(definition))
  }

  private present(definition: NetworkDefinition): Network {
    const { code, name, type, logo, reference } = definition
    const common = { code, name, ...(logo ? { logo } : {}) }
    if (type === 'crypto') {
      const details = this.chain === 'main' ? definition.chains!.main : definition.chains!.test
      return {
        ...common,
        type,
        exampleAddress: details.exampleAddress,
        ...(reference && reference.type !== 'payment-reference' ? { reference: { type: reference.type } } : {}),
        ...(details.explorer ? { explorer: details.explorer } : {}),
      }
    }
    if (type === 'bank') return { ...common, type, ...(reference?.type === 'payment-reference' ? { reference: { type: 'payment-reference' as const } } : {}) }
    return { ...common, type }
  }

  /** The type of a network of the catalogue, or undefined. */
  networkType(code: string): string | undefined {
    return this.definitions.get(code)?.type
  }

  /** How addresses of a crypto network of the catalogue are written; undefined for other networks. */
  addressFamily(code: string): AddressFamily | undefined {
    const definition = this.definitions.get(code)
    return definition?.type === 'crypto' ? definition.addressFamily : undefined
  }

  /** The one spelling of an address of a crypto network of the catalogue (as written for any other network). */
  canonicalAddress(code: string, address: string, reference?: string): string {
    const family = this.addressFamily(code)
    return family === undefined ? address : canonicalAddress(family, address, reference)
  }

  /** The chain this deployment uses: test chains in sandbox, main chains in production. */
  get deploymentChain(): Chain {
    return this.chain
  }

  list(types?: readonly string[]): Network[] {
    return types === undefined ? [...this.networks] : this.networks.filter((network) => types.includes(network.type))
  }

  get(code: string): Network {
    const network = this.networks.find((n) => n.code === code)
    if (!network) throw notFound('network')
    return network
  }

  validateAddress(code: string, address: string, reference?: string): AddressCheck {
    const definition = this.definitions.get(code)
    if (!definition) throw notFound('network')
    if (definition.type !== 'crypto' || !definition.addressFamily) {
      throw new DomainError('operation_not_allowed', 'Network must be a crypto network')
    }
    return validateAddress(definition.addressFamily, this.chain, address, reference)
  }
}
