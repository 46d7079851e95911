/**
 * Verifications of crypto external accounts through the HTTP API (src/modules/external-accounts/verifications.*):
 * starting each level, the full form in the list and the compact form in every external account, the declared
 * level answered against the very schema it serves, the verified level answered with real signatures of the
 * message on every network (and refused with altered, foreign or cross-network ones), completed levels final,
 * isolation, scopes, and the travel rule's entry (`declaredAddresses`).
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Ajv } from 'ajv'
import fc from 'fast-check'
import { bearer, ENGINES, individualUser, useApp, type TestResponse } from './helpers.ts'
import { assertError } from './money.ts'
import { alterMessage, signMessage, testKeys, type SignOptions } from './signing.ts'

const URL_ = '/core/external-accounts'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'

const BTC_TESTNET = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
const ETH_ADDRESS = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const XRP_ADDRESS = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh'

const DECLARATION = { isVASP: false, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true }

interface Summary {
  level: string
  status: string
  via: string
  completedAt?: string
}
interface Verification extends Summary {
  requestForInformation: {
    id: string
    type: string
    status: string
    context: { network: string; addresses: string[] }
    proofOptions: { selfDeclaration?: { schema: Record<string, unknown> }; messageSigning?: { message: string } }
    proof?: Record<string, unknown>
  }
}
interface ExternalAccount {
  id: string
  type: string
  status: string
  network: string
  details: { address?: string }
  verifications?: Summary[]
}

const bitcoinBody = (address = BTC_TESTNET) => ({ type: 'crypto', asset: 'BTC', network: 'bitcoin', label: 'Cold wallet', address })
const ethereumBody = (address = ETH_ADDRESS) => ({ type: 'crypto', asset: 'ETH', network: 'ethereum', label: 'Hot wallet', address })
const xrpBody = (reference = '12345') => ({ type: 'crypto', asset: 'XRP', network: 'xrp-ledger', label: 'Exchange', address: XRP_ADDRESS, reference })
const P2WSH_TESTNET = 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7'

type Signer = Omit<SignOptions, 'message' | 'chain'>
interface SignedCase {
  name: string
  body: Record<string, unknown>
  signer: Signer
  scheme: string
}
const ADDRESSES = testKeys.primary.addresses
const crypto = (asset: string, network: string, address: string, extra: Record<string, unknown> = {}) => ({ type: 'crypto', asset, network, label: `${network} wallet`, address, ...extra })
/** A signature of every kind each network's wallets make, for the sandbox's test chains. */
const SIGNED: SignedCase[] = [
  { name: 'bitcoin P2WPKH, BIP-322 simple', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2wpkh), signer: { family: 'bitcoin', addressType: 'p2wpkh' }, scheme: 'bip-322' },
  { name: 'bitcoin P2WPKH, BIP-137', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2wpkh), signer: { family: 'bitcoin', addressType: 'p2wpkh', scheme: 'bip-137' }, scheme: 'bip-137' },
  { name: 'bitcoin P2WPKH, BIP-137 with Electrum\'s header', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2wpkh), signer: { family: 'bitcoin', addressType: 'p2wpkh', scheme: 'bip-137', bip137Header: 'electrum' }, scheme: 'bip-137' },
  { name: 'bitcoin P2TR, BIP-322 simple', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2tr), signer: { family: 'bitcoin', addressType: 'p2tr' }, scheme: 'bip-322' },
  { name: 'bitcoin P2TR, BIP-322 full', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2tr), signer: { family: 'bitcoin', addressType: 'p2tr', bip322Format: 'full' }, scheme: 'bip-322' },
  { name: 'bitcoin legacy P2PKH, BIP-137', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2pkh), signer: { family: 'bitcoin', addressType: 'p2pkh' }, scheme: 'bip-137' },
  { name: 'bitcoin legacy P2PKH, BIP-322 full', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2pkh), signer: { family: 'bitcoin', addressType: 'p2pkh', scheme: 'bip-322' }, scheme: 'bip-322' },
  { name: 'bitcoin legacy P2PKH of an uncompressed key, BIP-137', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test['p2pkh-uncompressed']), signer: { family: 'bitcoin', addressType: 'p2pkh-uncompressed' }, scheme: 'bip-137' },
  { name: 'bitcoin P2SH-P2WPKH, BIP-322 simple', body: crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test['p2sh-p2wpkh']), signer: { family: 'bitcoin', addressType: 'p2sh-p2wpkh' }, scheme: 'bip-322' },
  { name: 'ethereum, EIP-191', body: crypto('ETH', 'ethereum', ADDRESSES.ethereum.test), signer: { family: 'ethereum' }, scheme: 'eip-191' },
  { name: 'ethereum, EIP-191, the address linked in lower case', body: crypto('ETH', 'ethereum', ADDRESSES.ethereum.test.toLowerCase()), signer: { family: 'ethereum' }, scheme: 'eip-191' },
  { name: 'solana, ed25519 in base58', body: crypto('SOL', 'solana', ADDRESSES.solana.test), signer: { family: 'solana' }, scheme: 'ed25519' },
  { name: 'solana, ed25519 in base64', body: crypto('SOL', 'solana', ADDRESSES.solana.test), signer: { family: 'solana', solanaEncoding: 'base64' }, scheme: 'ed25519' },
  { name: 'xrp-ledger, secp256k1 key', body: crypto('XRP', 'xrp-ledger', ADDRESSES['xrp-ledger'].test.secp256k1, { reference: '42' }), signer: { family: 'xrp-ledger', keyType: 'secp256k1' }, scheme: 'xrpl' },
  { name: 'xrp-ledger, ed25519 key', body: crypto('XRP', 'xrp-ledger', ADDRESSES['xrp-ledger'].test.ed25519), signer: { family: 'xrp-ledger', keyType: 'ed25519' }, scheme: 'xrpl' },
  { name: 'litecoin P2WPKH, BIP-322 simple', body: crypto('LTC', 'litecoin', ADDRESSES.litecoin.test.p2wpkh), signer: { family: 'litecoin', addressType: 'p2wpkh' }, scheme: 'bip-322' },
  { name: 'litecoin legacy P2PKH, BIP-137', body: crypto('LTC', 'litecoin', ADDRESSES.litecoin.test.p2pkh), signer: { family: 'litecoin', addressType: 'p2pkh' }, scheme: 'bip-137' },
]

/** The proof the API takes, from a wallet's signature of `message`. */
function proofOf(signer: Signer, message: string): { signature: string; publicKey?: string } {
  const signed = signMessage({ ...signer, chain: 'test', message } as SignOptions)
  return signed.publicKey === undefined ? { signature: signed.signature } : { signature: signed.signature, publicKey: signed.publicKey }
}

const sepaBody = () => ({ type: 'bank', asset: 'EUR', network: 'sepa', label: 'Compte courant', iban: 'DE89370400440532013000', bic: 'COBADEFFXXX' })

for (const engine of ENGINES) {
  describe(`external account verifications [${engine}]`, () => {
    const suite = useApp(engine)
    const db = () => suite.ctx.database.db
    const org = () => suite.ctx.client.organizationId

    const newUser = async (token = suite.token) => (await suite.ctx.createUser(token, individualUser())).id
    async function link(userId: string, body: Record<string, unknown>, token = suite.token): Promise<ExternalAccount> {
      const response = await suite.ctx.request({ method: 'POST', url: URL_, headers: bearer(token, userId), payload: body })
      assert.equal(response.status, 201, response.body)
      return response.json<{ externalAccount: ExternalAccount }>().externalAccount
    }
    const start = (userId: string, id: string, level: unknown, token = suite.token) =>
      suite.ctx.request({ method: 'POST', url: `${URL_}/${id}/verifications`, headers: bearer(token, userId), payload: { level } as Record<string, unknown> })
    const list = (userId: string, id: string, token = suite.token) => suite.ctx.request({ method: 'GET', url: `${URL_}/${id}/verifications`, headers: bearer(token, userId) })
    const answer = (userId: string, id: string, level: string, proof: unknown, token = suite.token) =>
      suite.ctx.request({ method: 'PUT', url: `${URL_}/${id}/verifications/${level}`, headers: bearer(token, userId), payload: { proof } as Record<string, unknown> })
    const getAccount = async (userId: string, id: string) => {
      const response = await suite.ctx.request({ method: 'GET', url: `${URL_}/${id}`, headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ externalAccount: ExternalAccount }>().externalAccount
    }
    const listAccounts = async (userId: string, query = '') => {
      const response = await suite.ctx.request({ method: 'GET', url: `${URL_}${query}`, headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ externalAccounts: ExternalAccount[] }>().externalAccounts
    }
    async function started(userId: string, id: string, level: string): Promise<Verification> {
      const response = await start(userId, id, level)
      assert.equal(response.status, 201, response.body)
      return response.json<{ verification: Verification }>().verification
    }
    async function verifications(userId: string, id: string): Promise<Verification[]> {
      const response = await list(userId, id)
      assert.equal(response.status, 200, response.body)
      return response.json<{ verifications: Verification[] }>().verifications
    }
    /** The verification rows of the organization, oldest first: what must not change when a request is refused. */
    const rows = () => db().selectFrom('external_account_verifications').selectAll().where('organization_id', '=', org()).orderBy('id').execute()
    const rowsOf = (externalAccountId: string) => db().selectFrom('external_account_verifications').selectAll().where('external_account_id', '=', externalAccountId).orderBy('level').execute()

    // --- Starting a level ------------------------------------------------------------------------------------------

    test('starting the declared level: 201 with the full form, the schema to answer; again: 200 with the same, never a second one', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      const response = await start(userId, account.id, 'declared')
      assert.equal(response.status, 201, response.body)
      const body = response.json<{ verification: Verification }>()
      assert.deepEqual(Object.keys(body), ['verification'])
      const verification = body.verification
      assert.match(verification.requestForInformation.id, UUID)
      const schema = verification.requestForInformation.proofOptions.selfDeclaration!.schema
      assert.deepEqual(verification, {
        level: 'declared',
        status: 'pending',
        via: 'request-for-information',
        requestForInformation: {
          id: verification.requestForInformation.id,
          type: 'crypto-address-travel-rule',
          status: 'pending',
          context: { network: 'bitcoin', addresses: [BTC_TESTNET] },
          proofOptions: { selfDeclaration: { schema } },
        },
      })
      // The schema asks for the three booleans, and nothing else.
      assert.equal(schema.type, 'object')
      assert.deepEqual([...(schema.required as string[])].sort(), ['isSelfHostedWallet', 'isSelfOwnedCryptoAddress', 'isVASP'])
      for (const name of schema.required as string[]) assert.deepEqual((schema.properties as Record<string, { type: string }>)[name]!.type, 'boolean')
      assert.equal(schema.additionalProperties, false)

      const again = await start(userId, account.id, 'declared')
      assert.equal(again.status, 200, again.body)
      assert.deepEqual(again.json(), body)
      assert.deepEqual(await verifications(userId, account.id), [verification])
      assert.equal((await rowsOf(account.id)).length, 1)
      assert.deepEqual((await getAccount(userId, account.id)).verifications, [{ level: 'declared', status: 'pending', via: 'request-for-information' }])
    })

    test('starting the verified level: a message of its own to sign, naming the address, the network and a nonce, and no organization', async () => {
      const userId = await newUser()
      const account = await link(userId, ethereumBody())
      const verification = await started(userId, account.id, 'verified')
      const message = verification.requestForInformation.proofOptions.messageSigning!.message
      assert.deepEqual(verification, {
        level: 'verified',
        status: 'pending',
        via: 'request-for-information',
        requestForInformation: {
          id: verification.requestForInformation.id,
          type: 'crypto-address-verification',
          status: 'pending',
          context: { network: 'ethereum', addresses: [ETH_ADDRESS] },
          proofOptions: { messageSigning: { message } },
        },
      })
      assert.ok(message.includes(`Address: ${ETH_ADDRESS}`), message)
      assert.ok(message.includes('Network: ethereum'), message)
      const nonce = /^Nonce: ([0-9a-f]{32})$/m.exec(message)?.[1]
      assert.ok(nonce, message)
      assert.doesNotMatch(message, /Tessera|Test client/i)

      // The same address for another user, or linked again for another asset, is asked another message.
      const other = await newUser()
      const othersAccount = await link(other, ethereumBody())
      const usdc = await link(userId, { ...ethereumBody(), asset: 'USDC' })
      const messages = [message, ...(await Promise.all([started(other, othersAccount.id, 'verified'), started(userId, usdc.id, 'verified')])).map((v) => v.requestForInformation.proofOptions.messageSigning!.message)]
      assert.equal(new Set(messages).size, 3)
      assert.equal(new Set(messages.map((m) => /^Nonce: (.*)$/m.exec(m)![1])).size, 3)

      // Started again: the same message (200), stored rather than made again.
      const again = await start(userId, account.id, 'verified')
      assert.equal(again.status, 200)
      assert.deepEqual(again.json<{ verification: Verification }>().verification, verification)
      const [row] = await rowsOf(account.id)
      assert.deepEqual(row!.proof_options, { messageSigning: { message } })
    })

    test('both levels: listed declared first, each once, in the full form; the compact form in get, list and update', async () => {
      const userId = await newUser()
      const account = await link(userId, xrpBody())
      const verified = await started(userId, account.id, 'verified')
      const declared = await started(userId, account.id, 'declared')
      assert.deepEqual(await verifications(userId, account.id), [declared, verified])
      assert.deepEqual(declared.requestForInformation.context, { network: 'xrp-ledger', addresses: [XRP_ADDRESS] })
      assert.notEqual(declared.requestForInformation.id, verified.requestForInformation.id)

      const compact = [
        { level: 'declared', status: 'pending', via: 'request-for-information' },
        { level: 'verified', status: 'pending', via: 'request-for-information' },
      ]
      assert.deepEqual((await getAccount(userId, account.id)).verifications, compact)
      assert.deepEqual((await listAccounts(userId)).find((a) => a.id === account.id)!.verifications, compact)
      const renamed = await suite.ctx.request({ method: 'PATCH', url: `${URL_}/${account.id}`, headers: bearer(suite.token, userId), payload: { label: 'Renamed' } })
      assert.equal(renamed.status, 200, renamed.body)
      assert.deepEqual(renamed.json<{ externalAccount: ExternalAccount }>().externalAccount.verifications, compact)
    })

    test('a list page shows each crypto account with its own verifications, and none on other types', async () => {
      const userId = await newUser()
      const none = await link(userId, bitcoinBody())
      const declared = await link(userId, ethereumBody())
      const both = await link(userId, xrpBody('777'))
      const bank = await link(userId, sepaBody())
      await started(userId, declared.id, 'declared')
      assert.equal((await answer(userId, declared.id, 'declared', DECLARATION)).status, 200)
      await started(userId, both.id, 'declared')
      await started(userId, both.id, 'verified')

      const accounts = await listAccounts(userId, '?perPage=100')
      const byId = new Map(accounts.map((a) => [a.id, a]))
      assert.deepEqual(byId.get(none.id)!.verifications, [])
      const [completed] = byId.get(declared.id)!.verifications!
      assert.match(completed!.completedAt!, ISO_MS)
      assert.deepEqual(byId.get(declared.id)!.verifications, [{ level: 'declared', status: 'completed', via: 'request-for-information', completedAt: completed!.completedAt }])
      assert.deepEqual(byId.get(both.id)!.verifications!.map((v) => `${v.level} ${v.status}`), ['declared pending', 'verified pending'])
      assert.equal('verifications' in byId.get(bank.id)!, false)
      // The filtered and paginated lists read the same.
      assert.deepEqual((await listAccounts(userId, '?type=crypto&perPage=1')).map((a) => a.verifications), [byId.get(both.id)!.verifications])
    })

    test('a level outside declared and verified, or a body of another shape, is 400 and starts nothing', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      for (const [payload, property, rule] of [
        [{ level: 'completed' }, 'level', 'enum'],
        [{ level: 'Declared' }, 'level', 'enum'],
        [{}, 'level', 'required'],
        [{ level: 'declared', proof: DECLARATION }, 'proof', 'additionalProperties'],
      ] as const) {
        const response = await suite.ctx.request({ method: 'POST', url: `${URL_}/${account.id}/verifications`, headers: bearer(suite.token, userId), payload })
        const details = assertError(response, 400, 'request_invalid') as { context: string; violations: { property: string; rule: string }[] }
        assert.equal(details.context, 'body')
        assert.ok(details.violations.some((v) => v.property === property && v.rule === rule), JSON.stringify(details))
      }
      assert.deepEqual(await rowsOf(account.id), [])
    })

    // --- The declared level ----------------------------------------------------------------------------------------

    test('declared, answered: 200, completed, the request ok with the proof; the compact form follows', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      const pending = await started(userId, account.id, 'declared')
      const response = await answer(userId, account.id, 'declared', DECLARATION)
      assert.equal(response.status, 200, response.body)
      const verification = response.json<{ verification: Verification }>().verification
      assert.match(verification.completedAt!, ISO_MS)
      assert.deepEqual(verification, {
        ...pending,
        status: 'completed',
        completedAt: verification.completedAt,
        requestForInformation: { ...pending.requestForInformation, status: 'ok', proof: DECLARATION },
      })
      assert.deepEqual(await verifications(userId, account.id), [verification])
      const shown = await getAccount(userId, account.id)
      assert.deepEqual(shown.verifications, [{ level: 'declared', status: 'completed', via: 'request-for-information', completedAt: verification.completedAt }])
      const [row] = await rowsOf(account.id)
      assert.equal(row!.status, 'completed')
      assert.deepEqual(row!.proof, DECLARATION)
      // A verification is not the account's status: the address stays ok, and no status change is announced.
      assert.equal(shown.status, 'ok')
      const events = await db().selectFrom('outbox_events').select('type').where('organization_id', '=', org()).where('subject_id', '=', account.id).orderBy('id').execute()
      assert.deepEqual(events.map((event) => event.type), ['core.external-account.created'])
    })

    test('declared, answered wrongly: 400 request_invalid with the violations, and nothing changes', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      await started(userId, account.id, 'declared')
      const before = await rows()
      const cases: [unknown, { property: string; rule: string }[]][] = [
        [{ ...DECLARATION, isVASP: 'no' }, [{ property: 'proof.isVASP', rule: 'type' }]],
        [{ ...DECLARATION, isSelfHostedWallet: 1 }, [{ property: 'proof.isSelfHostedWallet', rule: 'type' }]],
        [{ ...DECLARATION, isSelfOwnedCryptoAddress: null }, [{ property: 'proof.isSelfOwnedCryptoAddress', rule: 'type' }]],
        [{ ...DECLARATION, comment: 'mine' }, [{ property: 'proof.comment', rule: 'additionalProperties' }]],
        [{ isVASP: false }, [{ property: 'proof.isSelfHostedWallet', rule: 'required' }, { property: 'proof.isSelfOwnedCryptoAddress', rule: 'required' }]],
        [{}, [{ property: 'proof.isVASP', rule: 'required' }, { property: 'proof.isSelfHostedWallet', rule: 'required' }, { property: 'proof.isSelfOwnedCryptoAddress', rule: 'required' }]],
        // A service provider's address is not a self-hosted wallet.
        [{ isVASP: true, isSelfHostedWallet: true, isSelfOwnedCryptoAddress: true }, [{ property: 'proof.isSelfHostedWallet', rule: 'const' }]],
        // A signature is not a declaration.
        [{ signature: 'abc' }, [{ property: 'proof.signature', rule: 'additionalProperties' }, { property: 'proof.isVASP', rule: 'required' }]],
      ]
      for (const [proof, expected] of cases) {
        const details = assertError(await answer(userId, account.id, 'declared', proof), 400, 'request_invalid') as { context: string; violations: { property: string; rule: string }[] }
        assert.equal(details.context, 'body', JSON.stringify(proof))
        for (const violation of expected) {
          assert.ok(details.violations.some((v) => v.property === violation.property && v.rule === violation.rule), `${JSON.stringify(proof)}: ${JSON.stringify(details.violations)}`)
        }
      }
      // Not an object at all, or no proof: the route's own schema refuses it.
      for (const [payload, property, rule] of [[{ proof: true }, 'proof', 'type'], [{ proof: [DECLARATION] }, 'proof', 'type'], [{}, 'proof', 'required'], [{ proof: DECLARATION, level: 'declared' }, 'level', 'additionalProperties']] as const) {
        const response = await suite.ctx.request({ method: 'PUT', url: `${URL_}/${account.id}/verifications/declared`, headers: bearer(suite.token, userId), payload })
        const details = assertError(response, 400, 'request_invalid') as { violations: { property: string; rule: string }[] }
        assert.ok(details.violations.some((v) => v.property === property && v.rule === rule), JSON.stringify(details))
      }
      assert.deepEqual(await rows(), before)
      assert.equal((await verifications(userId, account.id))[0]!.status, 'pending')
    })

    test('the schema served is the schema enforced: any proof is accepted exactly when the served schema accepts it', async () => {
      const userId = await newUser()
      const ajv = new Ajv({ strict: false })
      const value = fc.oneof(fc.boolean(), fc.constant(null), fc.integer(), fc.string({ maxLength: 3 }))
      const proof = fc.oneof(
        fc.record({ isVASP: value, isSelfHostedWallet: value, isSelfOwnedCryptoAddress: value }, { requiredKeys: [] }),
        fc.record({ isVASP: fc.boolean(), isSelfHostedWallet: fc.boolean(), isSelfOwnedCryptoAddress: fc.boolean() }),
        fc.record({ isVASP: fc.boolean(), isSelfHostedWallet: fc.boolean(), isSelfOwnedCryptoAddress: fc.boolean(), other: value }, { requiredKeys: ['isVASP', 'isSelfHostedWallet', 'isSelfOwnedCryptoAddress'] }),
      )
      let index = 0
      await fc.assert(
        fc.asyncProperty(proof, async (candidate) => {
          const account = await link(userId, bitcoinBody(index++ % 2 === 0 ? BTC_TESTNET : 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'))
          const schema = (await started(userId, account.id, 'declared')).requestForInformation.proofOptions.selfDeclaration!.schema
          const response = await answer(userId, account.id, 'declared', candidate)
          assert.equal(response.status, ajv.validate(schema, candidate) ? 200 : 400, `${JSON.stringify(candidate)}: ${response.body}`)
          assert.equal((await rowsOf(account.id))[0]!.status, response.status === 200 ? 'completed' : 'pending')
          // Unlinked, so that the next run may link the same address again.
          assert.equal((await suite.ctx.request({ method: 'DELETE', url: `${URL_}/${account.id}`, headers: bearer(suite.token, userId) })).status, 204)
        }),
        { numRuns: 30 },
      )
    })

    test('a completed level is final: answered again, with any proof, 409 operation_not_allowed, and nothing changes', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      await started(userId, account.id, 'declared')
      assert.equal((await answer(userId, account.id, 'declared', DECLARATION)).status, 200)
      const before = await rows()
      for (const proof of [DECLARATION, { isVASP: true, isSelfHostedWallet: false, isSelfOwnedCryptoAddress: false }, { nonsense: 1 }]) {
        const details = assertError(await answer(userId, account.id, 'declared', proof), 409, 'operation_not_allowed')
        assert.deepEqual(details, { reasons: ['verification-update-not-allowed'] })
      }
      // Starting it again is the completed verification, as it stands.
      const again = await start(userId, account.id, 'declared')
      assert.equal(again.status, 200)
      assert.equal(again.json<{ verification: Verification }>().verification.status, 'completed')
      assert.deepEqual(await rows(), before)
    })

    test('two answers at once: one completes the level, the other is 409; two starts at once: one verification', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      const starts = await Promise.all([start(userId, account.id, 'declared'), start(userId, account.id, 'declared'), start(userId, account.id, 'declared')])
      assert.deepEqual(starts.map((r) => r.status).sort(), [200, 200, 201])
      assert.equal(new Set(starts.map((r) => r.json<{ verification: Verification }>().verification.requestForInformation.id)).size, 1)
      const answers = await Promise.all([answer(userId, account.id, 'declared', DECLARATION), answer(userId, account.id, 'declared', { ...DECLARATION, isSelfOwnedCryptoAddress: false })])
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409])
      const winner = answers.find((r) => r.status === 200)!.json<{ verification: Verification }>().verification
      assert.deepEqual((await verifications(userId, account.id))[0], winner)
    })

    test('a level not started is 404 external-account-verification, and starts nothing', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      assert.deepEqual(assertError(await answer(userId, account.id, 'declared', DECLARATION), 404, 'entity_not_found'), { entity: 'external-account-verification' })
      assert.deepEqual(assertError(await answer(userId, account.id, 'verified', { signature: 'abc' }), 404, 'entity_not_found'), { entity: 'external-account-verification' })
      assert.deepEqual(await verifications(userId, account.id), [])
    })

    // --- The verified level ------------------------------------------------------------------------------------------

    /** A new user's account of `body`, with its verified level started: the message to sign. */
    async function toVerify(body: Record<string, unknown>, userId?: string): Promise<{ userId: string; account: ExternalAccount; message: string; verification: Verification }> {
      const owner = userId ?? (await newUser())
      const account = await link(owner, body)
      const verification = await started(owner, account.id, 'verified')
      return { userId: owner, account, message: verification.requestForInformation.proofOptions.messageSigning!.message, verification }
    }

    for (const signedCase of SIGNED) {
      test(`verified by a real signature: ${signedCase.name}`, async () => {
        const { userId, account, message, verification: pending } = await toVerify(signedCase.body)
        const proof = proofOf(signedCase.signer, message)
        const response = await answer(userId, account.id, 'verified', proof)
        assert.equal(response.status, 200, response.body)
        const verification = response.json<{ verification: Verification }>().verification
        assert.match(verification.completedAt!, ISO_MS)
        assert.deepEqual(verification, {
          ...pending,
          status: 'completed',
          completedAt: verification.completedAt,
          requestForInformation: { ...pending.requestForInformation, status: 'ok', proof: { scheme: signedCase.scheme, ...proof } },
        })
        assert.deepEqual((await getAccount(userId, account.id)).verifications, [{ level: 'verified', status: 'completed', via: 'request-for-information', completedAt: verification.completedAt }])
        const network = signedCase.body.network as string
        const address = signedCase.body.address as string
        assert.deepEqual([...(await suite.ctx.services.externalAccounts.declaredAddresses(db(), org(), userId, network, [address]))], [address])
      })
    }

    test('verified, refused: an altered message or signature, another key, another network\'s or another verification\'s message; nothing changes', async () => {
      const userId = await newUser()
      const bitcoin = await toVerify(crypto('BTC', 'bitcoin', ADDRESSES.bitcoin.test.p2wpkh), userId)
      // The same key's litecoin address: its own verification, its own message.
      const litecoin = await toVerify(crypto('LTC', 'litecoin', ADDRESSES.litecoin.test.p2wpkh), userId)
      const ethereum = await toVerify(crypto('ETH', 'ethereum', ADDRESSES.ethereum.test), userId)
      const secondary = { privateKey: testKeys.secondary.secp256k1 }
      const valid = proofOf({ family: 'bitcoin', addressType: 'p2wpkh' }, bitcoin.message)
      const flipped = `${valid.signature.slice(0, 20)}${valid.signature[20] === 'A' ? 'B' : 'A'}${valid.signature.slice(21)}`
      const before = await rows()
      const refusals: [string, { account: ExternalAccount }, unknown, string[]][] = [
        ['a signature of another message', bitcoin, proofOf({ family: 'bitcoin', addressType: 'p2wpkh' }, alterMessage(bitcoin.message)), ['signature-mismatch']],
        ['an altered signature', bitcoin, { signature: flipped }, ['signature-mismatch', 'signature-malformed']],
        ['another key\'s signature (BIP-322)', bitcoin, proofOf({ family: 'bitcoin', addressType: 'p2wpkh', ...secondary }, bitcoin.message), ['signature-mismatch']],
        ['another key\'s signature (BIP-137)', bitcoin, proofOf({ family: 'bitcoin', addressType: 'p2wpkh', scheme: 'bip-137', ...secondary }, bitcoin.message), ['signature-mismatch']],
        ['the same key\'s signature of the litecoin verification\'s message', bitcoin, proofOf({ family: 'bitcoin', addressType: 'p2wpkh' }, litecoin.message), ['signature-mismatch']],
        ['a bitcoin wallet\'s BIP-137 signature, for litecoin', litecoin, proofOf({ family: 'bitcoin', addressType: 'p2wpkh', scheme: 'bip-137' }, litecoin.message), ['signature-mismatch']],
        ['a bitcoin signature, for ethereum', ethereum, proofOf({ family: 'bitcoin', addressType: 'p2wpkh', scheme: 'bip-137' }, ethereum.message), ['signature-malformed', 'signature-mismatch']],
        ['another key\'s signature, for ethereum', ethereum, proofOf({ family: 'ethereum', ...secondary }, ethereum.message), ['signature-mismatch']],
        ['not a signature at all', ethereum, { signature: 'I promise' }, ['signature-malformed']],
      ]
      for (const [name, target, proof, reasons] of refusals) {
        const details = assertError(await answer(userId, target.account.id, 'verified', proof), 409, 'crypto_address_signature_invalid') as { reason: string }
        assert.ok(reasons.includes(details.reason), `${name}: ${details.reason}`)
        assert.deepEqual(Object.keys(details), ['reason'], name)
      }
      // Never by a flag: a proof is a signature and nothing else.
      for (const proof of [{ verified: true }, { ...valid, verified: true }, { signature: '' }, { signature: 42 }]) {
        assertError(await answer(userId, bitcoin.account.id, 'verified', proof), 400, 'request_invalid')
      }
      assert.deepEqual(await rows(), before)
      // The right signature still completes each.
      assert.equal((await answer(userId, bitcoin.account.id, 'verified', valid)).status, 200)
      assert.equal((await answer(userId, litecoin.account.id, 'verified', proofOf({ family: 'litecoin', addressType: 'p2wpkh' }, litecoin.message))).status, 200)
      assert.equal((await answer(userId, ethereum.account.id, 'verified', proofOf({ family: 'ethereum' }, ethereum.message))).status, 200)
    })

    test('verified, refused: a replayed signature of another user\'s verification of the same address', async () => {
      const first = await toVerify(crypto('ETH', 'ethereum', ADDRESSES.ethereum.test))
      const second = await toVerify(crypto('ETH', 'ethereum', ADDRESSES.ethereum.test))
      const firstProof = proofOf({ family: 'ethereum' }, first.message)
      assert.equal((await answer(first.userId, first.account.id, 'verified', firstProof)).status, 200)
      assert.deepEqual(assertError(await answer(second.userId, second.account.id, 'verified', firstProof), 409, 'crypto_address_signature_invalid'), { reason: 'signature-mismatch' })
      assert.equal((await verifications(second.userId, second.account.id))[0]!.status, 'pending')
    })

    test('verified, XRP Ledger: the public key is required, and must be the address\'s', async () => {
      const { userId, account, message } = await toVerify(crypto('XRP', 'xrp-ledger', ADDRESSES['xrp-ledger'].test.secp256k1))
      const proof = proofOf({ family: 'xrp-ledger', keyType: 'secp256k1' }, message)
      const other = proofOf({ family: 'xrp-ledger', keyType: 'secp256k1', privateKey: testKeys.secondary.secp256k1 }, message)
      assert.deepEqual(assertError(await answer(userId, account.id, 'verified', { signature: proof.signature }), 409, 'crypto_address_signature_invalid'), { reason: 'public-key-required' })
      assert.deepEqual(assertError(await answer(userId, account.id, 'verified', { signature: proof.signature, publicKey: other.publicKey }), 409, 'crypto_address_signature_invalid'), { reason: 'public-key-mismatch' })
      assert.deepEqual(assertError(await answer(userId, account.id, 'verified', other), 409, 'crypto_address_signature_invalid'), { reason: 'public-key-mismatch' })
      assert.equal((await answer(userId, account.id, 'verified', proof)).status, 200)
    })

    test('verified, an address no signature can verify (P2WSH): refused as address-unsupported, still pending', async () => {
      const { userId, account, message } = await toVerify(crypto('BTC', 'bitcoin', P2WSH_TESTNET))
      const details = assertError(await answer(userId, account.id, 'verified', proofOf({ family: 'bitcoin', addressType: 'p2wpkh' }, message)), 409, 'crypto_address_signature_invalid')
      assert.deepEqual(details, { reason: 'address-unsupported' })
      assert.equal((await verifications(userId, account.id))[0]!.status, 'pending')
    })

    test('verified, completed: answered again, even with a valid signature, 409; the proof recorded stays', async () => {
      const { userId, account, message } = await toVerify(crypto('SOL', 'solana', ADDRESSES.solana.test))
      const proof = proofOf({ family: 'solana' }, message)
      assert.equal((await answer(userId, account.id, 'verified', proof)).status, 200)
      const before = await rows()
      for (const again of [proof, proofOf({ family: 'solana', solanaEncoding: 'hex' }, message), { signature: 'x' }]) {
        assert.deepEqual(assertError(await answer(userId, account.id, 'verified', again), 409, 'operation_not_allowed'), { reasons: ['verification-update-not-allowed'] })
      }
      assert.deepEqual(await rows(), before)
      assert.deepEqual((await verifications(userId, account.id))[0]!.requestForInformation.proof, { scheme: 'ed25519', ...proof })
    })

    test('the levels are independent: a declaration does not verify, a signature does not declare', async () => {
      const { userId, account, message } = await toVerify(crypto('ETH', 'ethereum', ADDRESSES.ethereum.test))
      await started(userId, account.id, 'declared')
      assertError(await answer(userId, account.id, 'verified', DECLARATION), 400, 'request_invalid')
      assertError(await answer(userId, account.id, 'declared', proofOf({ family: 'ethereum' }, message)), 400, 'request_invalid')
      assert.equal((await answer(userId, account.id, 'verified', proofOf({ family: 'ethereum' }, message))).status, 200)
      assert.deepEqual((await getAccount(userId, account.id)).verifications!.map((v) => `${v.level} ${v.status}`), ['declared pending', 'verified completed'])
    })

    // --- Which accounts ----------------------------------------------------------------------------------------------

    test('a bank account has no verifications: 404 external-account on every operation, as an unknown id', async () => {
      const userId = await newUser()
      const bank = await link(userId, sepaBody())
      for (const id of [bank.id, UNKNOWN_ID]) {
        for (const response of [await list(userId, id), await start(userId, id, 'declared'), await answer(userId, id, 'declared', DECLARATION)]) {
          assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'external-account' })
        }
      }
      assert.deepEqual(await rows().then((all) => all.filter((r) => r.owner_id === userId)), [])
    })

    test('a deleted crypto account: 404 everywhere, its verifications kept but no longer counted', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      await started(userId, account.id, 'declared')
      assert.equal((await answer(userId, account.id, 'declared', DECLARATION)).status, 200)
      assert.deepEqual([...(await suite.ctx.services.externalAccounts.declaredAddresses(db(), org(), userId, 'bitcoin', [BTC_TESTNET]))], [BTC_TESTNET])
      assert.equal((await suite.ctx.request({ method: 'DELETE', url: `${URL_}/${account.id}`, headers: bearer(suite.token, userId) })).status, 204)
      for (const response of [await list(userId, account.id), await start(userId, account.id, 'verified'), await answer(userId, account.id, 'declared', DECLARATION)]) {
        assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'external-account' })
      }
      assert.equal((await rowsOf(account.id)).length, 1)
      assert.equal((await suite.ctx.services.externalAccounts.declaredAddresses(db(), org(), userId, 'bitcoin', [BTC_TESTNET])).size, 0)
    })

    test('another user of the organization, or another organization: 404 external-account, and nothing changes', async () => {
      const ownerId = await newUser()
      const account = await link(ownerId, bitcoinBody())
      const verification = await started(ownerId, account.id, 'declared')
      const neighbour = await newUser()
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const stranger = await newUser(otherToken)
      const before = await rows()
      for (const [userId, token] of [[neighbour, suite.token], [stranger, otherToken]] as const) {
        for (const response of [
          await list(userId, account.id, token),
          await start(userId, account.id, 'verified', token),
          await answer(userId, account.id, 'declared', DECLARATION, token),
        ]) {
          assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'external-account' })
        }
      }
      // Another organization's client cannot even name the owner.
      assert.deepEqual(assertError(await list(ownerId, account.id, otherToken), 404, 'entity_not_found'), { entity: 'user' })
      assert.deepEqual(await rows(), before)
      assert.deepEqual(await verifications(ownerId, account.id), [verification])
    })

    test('scopes: read lists, update starts and answers; the client itself is not allowed; nothing changes on a refusal', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      const verification = await started(userId, account.id, 'declared')
      const readOnly = await suite.ctx.token(await suite.ctx.newClient('core.users:act-on-behalf-of core.external-accounts:read', org()))
      const refusals: [TestResponse, string][] = [
        [await start(userId, account.id, 'verified', readOnly), 'core.external-accounts:update'],
        [await answer(userId, account.id, 'declared', DECLARATION, readOnly), 'core.external-accounts:update'],
      ]
      const updateOnly = await suite.ctx.token(await suite.ctx.newClient('core.users:act-on-behalf-of core.external-accounts:update', org()))
      refusals.push([await list(userId, account.id, updateOnly), 'core.external-accounts:read'])
      for (const [response, scope] of refusals) {
        const details = assertError(response, 403, 'token_insufficient_scopes') as { security: { schemeScopes: string[] }[] }
        assert.ok(details.security[0]!.schemeScopes.includes(scope), JSON.stringify(details))
      }
      assert.deepEqual((await list(userId, account.id, readOnly)).json(), { verifications: [verification] })
      const asClient = bearer(suite.token)
      for (const response of [
        await suite.ctx.request({ method: 'GET', url: `${URL_}/${account.id}/verifications`, headers: asClient }),
        await suite.ctx.request({ method: 'POST', url: `${URL_}/${account.id}/verifications`, headers: asClient, payload: { level: 'verified' } }),
        await suite.ctx.request({ method: 'PUT', url: `${URL_}/${account.id}/verifications/declared`, headers: asClient, payload: { proof: DECLARATION } }),
      ]) {
        const details = assertError(response, 403, 'subject_not_allowed') as { allowedSubjects: string[] }
        assert.deepEqual([...details.allowedSubjects].sort(), ['user:business', 'user:individual'])
      }
      assert.deepEqual(await verifications(userId, account.id), [verification])
      // With the update scope it works.
      assert.equal((await answer(userId, account.id, 'declared', DECLARATION, updateOnly)).status, 200)
    })

    test('a malformed id is 404 as an unknown one is, a malformed level 400 in the params, never 500', async () => {
      const userId = await newUser()
      const account = await link(userId, bitcoinBody())
      for (const id of ['abc', '123', `${UNKNOWN_ID}0`, 'null', '%20', UNKNOWN_ID.replaceAll('-', '')]) {
        for (const response of [await list(userId, id), await start(userId, id, 'declared'), await answer(userId, id, 'declared', DECLARATION)]) {
          assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'external-account' }, `${id}: ${response.body}`)
        }
      }
      for (const level of ['completed', 'DECLARED', 'travel-rule', '%20']) {
        assert.equal(assertError(await answer(userId, account.id, level, DECLARATION), 400, 'request_invalid')?.context, 'params', level)
      }
      // Ids are matched in any letter case, as everywhere.
      await started(userId, account.id.toUpperCase(), 'declared')
      assert.equal((await verifications(userId, account.id.toUpperCase())).length, 1)
    })

    // --- The travel rule's entry -------------------------------------------------------------------------------------

    test('declaredAddresses: the user\'s addresses with a completed verification on the network, in any spelling', async () => {
      const userId = await newUser()
      const bitcoin = await link(userId, bitcoinBody())
      const ethereum = await link(userId, ethereumBody())
      const pending = await link(userId, bitcoinBody('tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'))
      for (const account of [bitcoin, ethereum, pending]) await started(userId, account.id, 'declared')
      for (const account of [bitcoin, ethereum]) assert.equal((await answer(userId, account.id, 'declared', DECLARATION)).status, 200)
      const declared = (network: string, addresses: string[], ownerId = userId, organizationId = org()) =>
        suite.ctx.services.externalAccounts.declaredAddresses(db(), organizationId, ownerId, network, addresses)

      const asked = [BTC_TESTNET.toUpperCase(), 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', ETH_ADDRESS, 'not an address']
      assert.deepEqual([...(await declared('bitcoin', asked))], [BTC_TESTNET.toUpperCase()])
      assert.deepEqual([...(await declared('ethereum', [ETH_ADDRESS.toLowerCase(), BTC_TESTNET]))], [ETH_ADDRESS.toLowerCase()])
      assert.equal((await declared('ethereum', [])).size, 0)
      // Another user, another organization, another network: none.
      assert.equal((await declared('bitcoin', [BTC_TESTNET], await newUser())).size, 0)
      assert.equal((await declared('bitcoin', [BTC_TESTNET], userId, (await suite.ctx.newClient()).organizationId)).size, 0)
      assert.equal((await declared('litecoin', [BTC_TESTNET])).size, 0)
    })
  })
}
