import Type, { type Static } from 'typebox'
import { component } from '../../http/schemas.ts'

// ---------------------------------------------------------------------------------------------------------------
// reference-data/deposit-banks.json: the bank that holds the accounts users receive bank deposits on.

const BankAddress = Type.Object(
  {
    line1: Type.String({ minLength: 1, description: 'The first line of the bank\'s address.' }),
    line2: Type.Optional(Type.String({ minLength: 1, description: 'The second line of the bank\'s address.' })),
  },
  { additionalProperties: false, description: 'The address of the bank.' },
)
const BankBase = { bankName: Type.String({ minLength: 1 }), bankAddress: BankAddress }

export const DepositBanksFile = Type.Object({
  /** Shipped values are a sandbox bank: production offers no bank deposit method until an operator replaces them. */
  sandbox: Type.Boolean(),
  banks: Type.Object({
    sepa: Type.Optional(
      Type.Object({
        ...BankBase,
        bic: Type.String({ pattern: '^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$' }),
        ibanCountry: Type.String({ pattern: '^[A-Z]{2}$' }),
        bankCode: Type.String({ pattern: '^[A-Z0-9]+$' }),
        accountDigits: Type.Integer({ minimum: 4, maximum: 30 }),
        referencePrefix: Type.String({ pattern: '^[A-Z]{1,6}$' }),
      }),
    ),
    fps: Type.Optional(Type.Object({ ...BankBase, sortCode: Type.String({ pattern: '^[0-9]{6}$' }), referencePrefix: Type.String({ pattern: '^[A-Z]{1,6}$' }) })),
    us: Type.Optional(Type.Object({ ...BankBase, routingNumber: Type.String({ pattern: '^[0-9]{9}$' }) })),
  }),
})
export type DepositBanksFile = Static<typeof DepositBanksFile>
export type DepositBanks = DepositBanksFile['banks']

// ---------------------------------------------------------------------------------------------------------------
// API

export const DEPOSIT_METHOD_TYPES = ['crypto', 'bank'] as const
export const US_RAILS = ['ach', 'fednow', 'rtp', 'wire'] as const

export const DepositMethodQuery = Type.Object({
  type: Type.Enum([...DEPOSIT_METHOD_TYPES], { description: 'The type of the deposit method.' }),
  asset: Type.String({ minLength: 1, maxLength: 32, description: 'The asset to deposit: the account\'s asset.' }),
  network: Type.String({ minLength: 1, maxLength: 64, description: 'The network to deposit over (e.g. `bitcoin`, `sepa`).' }),
})
export type DepositMethodQuery = Static<typeof DepositMethodQuery>

const AddressFormat = component(
  'account-deposit-method-detail-crypto-format',
  Type.Enum(['native-segwit', 'wrapped-segwit', 'pubkey-hash'], { description: 'An address form.' }),
)

export const CryptoDetails = component(
  'account-deposit-method-details-crypto',
  Type.Object({
    network: Type.String({ description: 'The crypto network to send over.' }),
    asset: Type.String({ description: 'The asset to send.' }),
    address: Type.String({ description: 'The address to send to (its preferred form).' }),
    addressFormats: Type.Array(
      Type.Object({ format: AddressFormat, value: Type.String({ description: 'The address in this form.' }) }),
      { minItems: 1, description: 'Every form of the address; each one credits the same account.' },
    ),
    reference: Type.Optional(Type.String({ description: 'The destination tag (or memo) the sender must include, on networks that use one.' })),
  }),
)

const bankBase = {
  asset: Type.String({ description: 'The asset of the transfer.' }),
  beneficiary: Type.String({ description: 'The name to give as the transfer\'s beneficiary.' }),
  bankName: Type.String({ description: 'The name of the bank holding the account.' }),
  bankAddress: Type.Object(
    { line1: Type.String({ description: 'First line.' }), line2: Type.Optional(Type.String({ description: 'Second line.' })) },
    { description: 'The address of the bank holding the account.' },
  ),
}

export const FpsDetails = component(
  'account-deposit-method-details-bank-fps',
  Type.Object({
    network: Type.Literal('fps'),
    ...bankBase,
    sortCode: Type.String({ description: 'The sort code to pay to.' }),
    accountNumber: Type.String({ description: 'The account number to pay to.' }),
    reference: Type.Optional(Type.String({ description: 'The reference to write in the payment\'s description.' })),
  }),
)

export const SepaDetails = component(
  'account-deposit-method-details-bank-sepa',
  Type.Object({
    network: Type.Literal('sepa'),
    ...bankBase,
    bic: Type.String({ description: 'The bank\'s BIC.' }),
    iban: Type.String({ description: 'The IBAN to pay to.' }),
    reference: Type.String({ description: 'The reference to write in the transfer\'s description.' }),
  }),
)

export const UsRailsDetails = component(
  'account-deposit-method-details-bank-us-rails',
  Type.Object({
    network: Type.Enum([...US_RAILS]),
    ...bankBase,
    routingNumber: Type.String({ description: 'The ABA routing number to pay to.' }),
    accountNumber: Type.String({ description: 'The account number to pay to.' }),
    accountType: Type.Literal('checking', { description: 'The type of the account.' }),
    secondaryNetworks: Type.Optional(Type.Array(Type.Enum([...US_RAILS]), { description: 'The other US rails the same account receives on.' })),
  }),
)

export const DepositMethod = component(
  'account-deposit-method',
  Type.Object(
    {
      type: Type.Enum([...DEPOSIT_METHOD_TYPES], { description: 'The deposit method type.' }),
      status: Type.Enum(['processing', 'ok', 'failed'], {
        description: '`processing` while the method is being provisioned, `ok` once deposits to it are credited.',
      }),
      details: Type.Optional(Type.Union([CryptoDetails, FpsDetails, SepaDetails, UsRailsDetails], { description: 'Where and how to send a deposit.' })),
    },
    { description: 'How to deposit into an account from outside.' },
  ),
)
export type DepositMethod = Static<typeof DepositMethod>
export type DepositMethodDetails = NonNullable<DepositMethod['details']>

export const DepositMethodResponse = component('get-account-deposit-method-response', Type.Object({ depositMethod: DepositMethod }))
