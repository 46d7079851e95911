import assert from 'node:assert/strict'
import { test } from 'node:test'
import { grantedScopes, parseScopeGrant } from './clients.service.ts'
import { SCOPES, ScopeCatalogue } from './scopes.ts'

test('the catalogue holds the constant scopes and the connector scopes of each configured provider', () => {
  const catalogue = new ScopeCatalogue({ kycConnectorProviders: ['veriff', 'sumsub'] })
  for (const scope of Object.keys(SCOPES)) assert.ok(catalogue.has(scope), scope)
  for (const scope of ['kyc-connector.veriff.config:read', 'kyc-connector.veriff.config:write', 'kyc-connector.sumsub.config:read', 'kyc-connector.sumsub.config:write']) {
    assert.ok(catalogue.has(scope), scope)
    assert.ok(catalogue.all.includes(scope), scope)
    assert.equal(typeof catalogue.descriptions[scope], 'string')
  }
  assert.equal(catalogue.all.length, Object.keys(SCOPES).length + 4)
})

test('a provider that is not configured has no scopes, and nothing inherited from Object counts as a scope', () => {
  const catalogue = new ScopeCatalogue({ kycConnectorProviders: ['veriff'] })
  assert.equal(catalogue.has('kyc-connector.sumsub.config:read'), false)
  assert.equal(catalogue.has('toString'), false)
  assert.equal(catalogue.has('__proto__'), false)
})

test('grants are checked against the catalogue; `*` stands for all of it', () => {
  const catalogue = new ScopeCatalogue({ kycConnectorProviders: ['veriff', 'onfido'] })
  assert.equal(parseScopeGrant('kyc-connector.onfido.config:write core.users:read', catalogue), 'core.users:read kyc-connector.onfido.config:write')
  assert.throws(() => parseScopeGrant('kyc-connector.sumsub.config:write', catalogue), /Unknown scope/)
  assert.deepEqual(grantedScopes('*', catalogue), [...catalogue.all])
  // A provider taken out of the configuration takes its scopes out of existing grants.
  const narrower = new ScopeCatalogue({ kycConnectorProviders: ['veriff'] })
  assert.deepEqual(grantedScopes('core.users:read kyc-connector.onfido.config:write', narrower), ['core.users:read'])
})
