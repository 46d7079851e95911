/**
 * Where prices come from. Every price is the value of one unit of an asset in US dollars, as a decimal
 * string; cross rates are derived from these by the rates service. A production adapter (an exchange or a
 * market-data vendor) implements the same interface as the sandbox simulator.
 */
export interface UsdQuote {
  mid: string
  /** Below mid: what a buyer of the asset would be paid when selling it. */
  bid: string
  /** Above mid: what a buyer pays. */
  ask: string
}

export interface PriceFeed {
  /** The quote at an instant (now or in the past), or null where the feed has no price for the asset. */
  usdQuote(asset: string, at: Date): Promise<UsdQuote | null>
  /** Circulating supply times mid, in US dollars, where the feed knows the supply. */
  marketCapUsd(asset: string, at: Date): Promise<string | null>
}
