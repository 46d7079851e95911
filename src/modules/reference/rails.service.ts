import type { Chain } from './addresses.ts'
import type { Rail, RailDefinition } from './rails.schemas.ts'
import { ReferenceDataError } from './reference-data.ts'

export interface RailFilters {
  type?: readonly string[]
  network?: readonly string[]
  method?: readonly string[]
  asset?: readonly string[]
}

/**
 * How assets move over networks, as this deployment offers them: a token rail whose contract is not
 * given for the deployment's chain is left out.
 */
export class RailsService {
  private readonly rails: readonly Rail[]

  constructor(definitions: readonly RailDefinition[], chain: Chain, catalogue: { networkType(code: string): string | undefined; hasAsset?(code: string): boolean }) {
    const problems: string[] = []
    const seen = new Set<string>()
    for (const rail of definitions) {
      const label = `${rail.network}/${rail.asset}/${rail.method}`
      if (seen.has(label)) problems.push(`${label}: defined twice`)
      seen.add(label)
      const networkType = catalogue.networkType(rail.network)
      if (networkType === undefined) problems.push(`${label}: unknown network ${rail.network}`)
      else if (networkType !== rail.type) problems.push(`${label}: network ${rail.network} is ${networkType}, not ${rail.type}`)
      if (catalogue.hasAsset && !catalogue.hasAsset(rail.asset)) problems.push(`${label}: unknown asset ${rail.asset}`)
    }
    if (problems.length > 0) throw new ReferenceDataError(`Invalid rails:\n${problems.map((p) => `  - ${p}`).join('\n')}`)

    this.rails = definitions.flatMap((rail): Rail[] => {
      const { chains, ...rest } = rail
      if (!chains) return [rest as Rail]
      const contract = chain === 'main' ? chains.main : chains.test
      return contract ? [{ ...rest, contractAddress: contract.contractAddress } as Rail] : []
    })
  }

  list(filters: RailFilters = {}): Rail[] {
    const matches = (allowed: readonly string[] | undefined, value: string) => allowed === undefined || allowed.includes(value)
    return this.rails.filter(
      (rail) => matches(filters.type, rail.type) && matches(filters.network, rail.network) && matches(filters.method, rail.method) && matches(filters.asset, rail.asset),
    )
  }
}
