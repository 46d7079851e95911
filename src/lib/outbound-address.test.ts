import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isPublicAddress, OutboundAddressRefused, publicAddresses, type Resolver } from './outbound-address.ts'

test('loopback, private, link-local, metadata and reserved addresses are not public, in every spelling', () => {
  for (const address of [
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '192.0.2.10', '198.18.0.1',
    '::1', '[::1]', '::', '::ffff:127.0.0.1', '::FFFF:10.1.2.3', '::ffff:7f00:1', '0:0:0:0:0:ffff:a9fe:a9fe', '::7f00:1', '0:0:0:0:0:0:0:1', '::ffff:169.254.169.254', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1',
    '64:ff9b::7f00:1', '2002:7f00:1::1', '2001:db8::1',
    'localhost', 'example.com', '', '1.2.3', '01.2.3.4',
  ]) assert.equal(isPublicAddress(address), false, address)
})

test('public addresses are public', () => {
  for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '172.15.255.255', '192.169.0.1', '100.128.0.1', '2606:4700:4700::1111', '[2a00:1450:4007:80e::200e]', '::ffff:8.8.8.8', '::ffff:808:808']) {
    assert.equal(isPublicAddress(address), true, address)
  }
})

test('a name is refused when any address it resolves to is not public, or when it does not resolve', async () => {
  const dns = (table: Record<string, string[]>): Resolver => async (host) => {
    const found = table[host]
    if (!found) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' })
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  const resolve = dns({ 'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'], 'sneaky.example.com': ['93.184.215.14', '10.0.0.5'], 'meta.example.com': ['169.254.169.254'], 'six.example.com': ['::1'] })
  assert.deepEqual(await publicAddresses('hooks.example.com', resolve), ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'])
  assert.deepEqual(await publicAddresses('8.8.8.8', resolve), ['8.8.8.8'])
  for (const host of ['sneaky.example.com', 'meta.example.com', 'six.example.com', 'nowhere.example.com', '127.0.0.1', '[::1]', '10.0.0.1']) {
    await assert.rejects(publicAddresses(host, resolve), OutboundAddressRefused, host)
  }
})
