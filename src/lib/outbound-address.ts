import { BlockList, isIP } from 'node:net'
import { lookup as dnsLookup } from 'node:dns/promises'

/**
 * Where Tessera may send a request a client asked for (a webhook endpoint): in production, only to public addresses.
 * An address in any range below is refused: it reaches this host, the private network it runs in, or the cloud's
 * metadata service (169.254.169.254) — the targets of server-side request forgery. The check is made on every
 * address the name resolves to, at the moment of sending (a name may resolve elsewhere than when it was saved), and
 * the request then goes to the checked address itself, so that a second resolution cannot swap it.
 */
const NOT_PUBLIC = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) NOT_PUBLIC.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 96], // unspecified, loopback, IPv4-compatible (deprecated)
  ['64:ff9b::', 96], // NAT64 (embeds IPv4)
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, …)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (embeds IPv4)
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) NOT_PUBLIC.addSubnet(network, prefix, 'ipv6')

/** The eight 16-bit groups of an IPv6 address (a valid literal: `isIP` said 6). */
function ipv6Groups(address: string): number[] {
  let text = address
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)))
  const first = parse(head)
  const last = tail === undefined ? [] : parse(tail)
  return [...first, ...Array<number>(8 - first.length - last.length).fill(0), ...last]
}

/**
 * An IPv4 address written as IPv4-mapped IPv6 (`::ffff:127.0.0.1`, `::ffff:7f00:1`), as IPv4, so that it meets the
 * IPv4 rules; other addresses unchanged.
 */
function unmapped(address: string): { address: string; family: 'ipv4' | 'ipv6' } {
  if (isIP(address) === 4) return { address, family: 'ipv4' }
  const groups = ipv6Groups(address)
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high, low] = [groups[6]!, groups[7]!]
    return { address: `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, family: 'ipv4' }
  }
  return { address, family: 'ipv6' }
}

/** Whether an IP address (v4 or v6 literal) is public; anything that is not an IP address is not. */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address
  if (isIP(bare) === 0) return false
  const { address: checked, family } = unmapped(bare)
  return !NOT_PUBLIC.check(checked, family)
}

export class OutboundAddressRefused extends Error {
  readonly host: string
  /** The addresses that are not public; empty when the host did not resolve. */
  readonly addresses: readonly string[]
  constructor(host: string, addresses: readonly string[]) {
    super(addresses.length === 0 ? `${host} does not resolve` : `${host} resolves to an address that is not public (${addresses.join(', ')})`)
    this.host = host
    this.addresses = addresses
  }
}

export type Resolver = (host: string) => Promise<readonly { address: string; family: number }[]>

const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true })

/**
 * The addresses a host (a name or an IP literal) resolves to, once every one of them is public; throws
 * `OutboundAddressRefused` otherwise (one private address among public ones is enough to refuse: a client could
 * otherwise make Tessera reach it on a retry).
 */
export async function publicAddresses(host: string, resolve: Resolver = systemResolver): Promise<string[]> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  const addresses = isIP(bare) !== 0 ? [bare] : (await resolve(bare).catch(() => [])).map((entry) => entry.address)
  if (addresses.length === 0 || !addresses.every(isPublicAddress)) throw new OutboundAddressRefused(host, addresses.filter((a) => !isPublicAddress(a)))
  return addresses
}
