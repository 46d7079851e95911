import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { bearer, ENGINES, individualUser, USER_IP, useApp } from './helpers.ts'

interface Capability {
  code: string
  name: string
  enabled: boolean
  requirements: string[]
  restrictions: string[]
}

const electronicIdentity = (familyName: string) => ({
  type: 'electronic-verification',
  input: { data: { givenName: 'John', familyName, birthdate: '1987-01-01', citizenshipCountry: 'GB' } },
})
const electronicProofOfAddress = {
  type: 'electronic-verification',
  input: { data: { givenName: 'John', familyName: 'Doe', address: { country: 'GB', city: 'Manchester', line1: '1 High Street', postalCode: 'M4 1AA' } } },
}
const dueDiligenceAnswers = [
  { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
  { 'financial-information': { 'source-of-funds': 'salary', 'annual-income-range': '40000-60000-GBP', 'expected-annual-deposits-range': '0-5000-GBP' } },
  { employment: { status: 'employed' } },
]

for (const engine of ENGINES) {
  describe(`capabilities [${engine}]`, () => {
    const suite = useApp(engine)

    const newUser = async (body: Record<string, unknown> = individualUser()) => (await suite.ctx.createUser(suite.token, body)).id
    const list = async (userId: string, token = suite.token) => {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/capabilities', headers: bearer(token, userId) })
      assert.equal(response.status, 200, response.body)
      return new Map(response.json<{ capabilities: Capability[] }>().capabilities.map((c) => [c.code, c]))
    }
    const get = async (userId: string, code: string) => {
      const response = await suite.ctx.request({ method: 'GET', url: `/core/capabilities/${code}`, headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ capability: Capability }>().capability
    }
    const kyc = async (userId: string, process: string, payload: unknown) => {
      const response = await suite.ctx.request({ method: 'PATCH', url: `/core/kyc/processes/${process}`, headers: bearer(suite.token, userId), payload: payload as Record<string, unknown> })
      assert.equal(response.status, 200, response.body)
    }
    const verify = async (userId: string) => {
      await kyc(userId, 'identity', electronicIdentity('Doe'))
      await kyc(userId, 'proof-of-address', electronicProofOfAddress)
      for (const answers of dueDiligenceAnswers) await kyc(userId, 'customer-due-diligence', { input: { answers } })
    }
    const btcFeatures = async (userId: string) => {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/assets/BTC', headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ asset: { features: string[] } }>().asset.features
    }

    test('a new user: every capability listed, what they must submit, and what this deployment does not offer', async () => {
      const userId = await newUser(individualUser({ address: { country: 'FR' }, primaryCitizenship: 'FR', termsOfService: 'general-lt-fcs' }))
      const capabilities = await list(userId)
      assert.equal(capabilities.size, 17)
      assert.deepEqual(capabilities.get('bank-deposits'), {
        code: 'bank-deposits',
        name: 'Deposit from bank',
        enabled: true,
        requirements: ['user-must-submit-identity', 'user-must-submit-customer-due-diligence', 'user-must-submit-proof-of-address'],
        restrictions: [],
      })
      assert.deepEqual(capabilities.get('apple-pay')!.restrictions, ['temporarily-disabled'])
      assert.equal(capabilities.get('apple-pay')!.enabled, false)
      assert.deepEqual(await get(userId, 'bank-deposits'), capabilities.get('bank-deposits'))
      // Requirements do not hide features: the user can still fulfil them.
      assert.deepEqual(await btcFeatures(userId), ['buy', 'deposit', 'sell', 'transfer', 'withdraw'])
    })

    test('verified KYC satisfies the requirements; GB residents must also pass the financial-promotion steps to trade', async () => {
      const userId = await newUser()
      await verify(userId)
      const capabilities = await list(userId)
      for (const code of ['bank-deposits', 'crypto-deposits', 'sends', 'receives', 'crypto-withdrawals']) {
        assert.deepEqual(capabilities.get(code)!.requirements, [], code)
        assert.equal(capabilities.get(code)!.enabled, true, code)
      }
      assert.deepEqual(capabilities.get('trades')!.requirements, ['user-must-submit-self-categorization-form', 'user-must-submit-crypto-risk-assessment-form'])
    })

    test('a failed identity check restricts every capability that needs it, and the assets lose their features', async () => {
      // Outside GB, so that no financial-promotion cooldown narrows the features as well.
      const userId = await newUser(individualUser({ address: { country: 'FR' }, termsOfService: 'general-lt-fcs' }))
      await kyc(userId, 'identity', electronicIdentity('Rejected'))
      const capabilities = await list(userId)
      assert.deepEqual(capabilities.get('crypto-withdrawals')!.restrictions, ['user-identity-not-valid'])
      assert.equal(capabilities.get('crypto-withdrawals')!.enabled, false)
      assert.deepEqual(await btcFeatures(userId), [])
      // A new check that passes lifts the restriction.
      await kyc(userId, 'identity', electronicIdentity('Doe'))
      assert.deepEqual((await get(userId, 'crypto-withdrawals')).restrictions, [])
      assert.deepEqual(await btcFeatures(userId), ['buy', 'deposit', 'sell', 'transfer', 'withdraw'])
    })

    test('terms of service a capability needs are a requirement until accepted', async () => {
      const userId = await newUser()
      assert.ok((await get(userId, 'unique-account-number-viban')).requirements.includes('user-must-accept-unique-account-number-viban-terms-of-service'))
      const accepted = await suite.ctx.request({
        method: 'POST',
        url: '/core/terms-of-service/unique-account-number-viban/accept',
        headers: { ...bearer(suite.token, userId), 'x-service-user-ip': USER_IP },
      })
      assert.equal(accepted.status, 201, accepted.body)
      assert.ok(!(await get(userId, 'unique-account-number-viban')).requirements.includes('user-must-accept-unique-account-number-viban-terms-of-service'))
    })

    test('residents of a country this deployment does not serve are restricted everywhere', async () => {
      const userId = await newUser(individualUser({ address: { country: 'KP' }, primaryCitizenship: 'GB' }))
      for (const capability of (await list(userId)).values()) {
        assert.ok(capability.restrictions.includes('user-country-not-supported'), capability.code)
        assert.equal(capability.enabled, false)
      }
    })

    test('business users: cards are not offered to them; KYC steps stay to be submitted', async () => {
      const userId = await newUser({ type: 'business', email: `biz-${Date.now()}@example.com`, country: 'GB', legalEntityType: 'private-limited-company', termsOfService: 'general-gb-fca' })
      const capabilities = await list(userId)
      assert.deepEqual(capabilities.get('cards')!.restrictions, ['user-type-not-supported'])
      assert.ok(capabilities.get('bank-deposits')!.requirements.includes('user-must-submit-identity'))
    })

    test('modules that act for a user ask first: user_capability_failure naming the capability and what is missing, as the reference shapes it', async () => {
      const userId = await newUser(individualUser({ address: { country: 'FR' }, termsOfService: 'general-lt-fcs' }))
      const principal = { organizationId: suite.ctx.client.organizationId, clientId: suite.ctx.client.clientId, scopes: new Set<string>(), subject: 'user:individual' as const, userId }
      const { capabilities } = suite.ctx.services
      await assert.rejects(capabilities.require(principal, 'bank-deposits'), (error: { code: string; details: Record<string, unknown> }) => {
        assert.equal(error.code, 'user_capability_failure')
        assert.deepEqual(error.details, {
          capability: {
            code: 'bank-deposits',
            requirements: ['user-must-submit-identity', 'user-must-submit-customer-due-diligence', 'user-must-submit-proof-of-address'],
            restrictions: [],
          },
        })
        return true
      })
      await verify(userId)
      await capabilities.require(principal, 'bank-deposits')
    })

    test('an unknown capability is 400; acting for no user, or for another organization\'s user, is refused', async () => {
      const userId = await newUser()
      const unknown = await suite.ctx.request({ method: 'GET', url: '/core/capabilities/teleport', headers: bearer(suite.token, userId) })
      assert.equal(unknown.status, 400)
      assert.equal(unknown.json().code, 'request_invalid')
      const asClient = await suite.ctx.request({ method: 'GET', url: '/core/capabilities', headers: bearer(suite.token) })
      assert.equal(asClient.status, 403)
      const other = await suite.ctx.newClient()
      const foreign = await suite.ctx.request({ method: 'GET', url: '/core/capabilities', headers: bearer(await suite.ctx.token(other), userId) })
      assert.equal(foreign.status, 404)
      assert.equal(foreign.json().code, 'entity_not_found')
    })
  })
}
