import Type, { type Static, type TSchema } from 'typebox'
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

// ---------------------------------------------------------------------------------------------------------------
// Sandbox test helpers: simulated incoming deposits.

const NoEdgeSpaces = '^\\S.*\\S$|^\\S$'
const text = (description: string, options: Record<string, unknown> = {}) => Type.String({ pattern: NoEdgeSpaces, maxLength: 200, description, ...options })
const SimulatedAmount = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'The amount deposited, a positive decimal (e.g. `"100.50"`) with no more decimals than the asset has.',
})
const Digits = (min: number, max: number, description: string) => Type.String({ pattern: `^(?!0+$)[0-9]{${min},${max}}$`, description })
const RoutingNumber = (description: string) => Type.String({ pattern: '^[0-9]{9}$', description })
const IbanPattern = '^[A-Z]{2}[0-9]{2}[A-Z0-9]{4}[0-9]{7}([A-Z0-9]?){0,16}$'

export const SimulateCryptoDepositBody = component(
  'simulate-crypto-deposit-request',
  Type.Object(
    {
      network: text('The crypto network of the deposit.', { maxLength: 64 }),
      address: text('The address the deposit is sent to: one of a deposit method\'s address forms.', { maxLength: 128 }),
      reference: Type.Optional(text('The destination tag or memo, on networks that use one (XRP Ledger).', { maxLength: 64 })),
      asset: text('The asset deposited.', { maxLength: 32 }),
      amount: SimulatedAmount,
      remitter: Type.Optional(
        Type.Object(
          {
            addresses: Type.Optional(
              Type.Array(text('An address the funds come from.', { maxLength: 128 }), { minItems: 1, maxItems: 20, uniqueItems: true, description: 'The addresses the funds are sent from.' }),
            ),
          },
          { additionalProperties: false, minProperties: 1, description: 'The simulated sender.' },
        ),
      ),
    },
    { additionalProperties: false },
  ),
)
export type SimulateCryptoDepositBody = Static<typeof SimulateCryptoDepositBody>

export const SimulatedCryptoDeposit = Type.Object({
  network: Type.String({ description: 'The crypto network of the deposit.' }),
  address: Type.String({ description: 'The address the deposit was sent to.' }),
  reference: Type.Optional(Type.String({ description: 'The destination tag or memo.' })),
  asset: Type.String({ description: 'The asset deposited.' }),
  amount: Type.String({ description: 'The amount deposited.' }),
  remitter: Type.Optional(Type.Object({ addresses: Type.Optional(Type.Array(Type.String())) }, { description: 'The simulated sender.' })),
})
export const SimulateCryptoDepositResponse = component('simulate-crypto-deposit-response', Type.Object({ cryptoDeposit: SimulatedCryptoDeposit }))

const fpsRemitter = Type.Object(
  {
    name: Type.Optional(text('The sender\'s full name; the acting user\'s name when not given.')),
    sortCode: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', description: 'The sender\'s sort code; generated when not given.' })),
    accountNumber: Type.Optional(Type.String({ pattern: '^[0-9]{8}$', description: 'The sender\'s account number; generated when not given.' })),
  },
  { additionalProperties: false, minProperties: 1, description: 'The simulated sender.' },
)
const sepaRemitter = Type.Object(
  {
    name: Type.Optional(text('The sender\'s full name; the acting user\'s name when not given.')),
    bic: Type.Optional(Type.String({ pattern: '^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$', description: 'The sender\'s bank BIC; generated when not given.' })),
    iban: Type.Optional(Type.String({ pattern: IbanPattern, description: 'The sender\'s IBAN; generated when not given.' })),
  },
  { additionalProperties: false, minProperties: 1, description: 'The simulated sender.' },
)
const usRemitter = {
  name: Type.Optional(text('The sender\'s full name; the acting user\'s name when not given.')),
  accountNumber: Type.Optional(Digits(4, 17, 'The sender\'s account number; generated when not given.')),
  routingNumber: Type.Optional(RoutingNumber('The sender\'s routing number; generated when not given.')),
}

const instantUsDeposit = <N extends 'fednow' | 'rtp'>(network: N) =>
  Type.Object(
    {
      network: Type.Literal(network),
      accountNumber: Digits(4, 17, 'The account number of the deposit method.'),
      amount: SimulatedAmount,
      remitter: Type.Optional(Type.Object(usRemitter, { additionalProperties: false, minProperties: 1, description: 'The simulated sender.' })),
    },
    { additionalProperties: false },
  )

export const SimulateBankDepositBody = component(
  'simulate-bank-deposit-request',
  Type.Union([
    Type.Object(
      {
        network: Type.Literal('fps'),
        sortCode: Type.String({ pattern: '^[0-9]{6}$', description: 'The sort code of the deposit method.' }),
        accountNumber: Digits(6, 8, 'The account number of the deposit method.'),
        asset: text('The asset deposited (GBP).', { maxLength: 32 }),
        amount: SimulatedAmount,
        reference: Type.Optional(text('The payment reference the sender wrote.', { maxLength: 64 })),
        remitter: Type.Optional(fpsRemitter),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        network: Type.Literal('sepa'),
        iban: Type.String({ pattern: IbanPattern, description: 'The IBAN of the deposit method.' }),
        asset: text('The asset deposited (EUR).', { maxLength: 32 }),
        amount: SimulatedAmount,
        reference: Type.Optional(text('The payment reference the sender wrote.', { maxLength: 64 })),
        remitter: Type.Optional(sepaRemitter),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        network: Type.Literal('ach'),
        accountNumber: Digits(4, 17, 'The account number of the deposit method.'),
        routingNumber: RoutingNumber('The routing number of the deposit method.'),
        amount: SimulatedAmount,
        remitter: Type.Optional(
          Type.Object(
            {
              ...usRemitter,
              secCode: Type.Optional(Type.Enum(['CCD', 'PPD', 'WEB'], { description: 'The ACH SEC code; WEB when not given.' })),
              transactionType: Type.Optional(Type.Enum(['Pull', 'Push'], { description: 'Push when not given.' })),
              serviceType: Type.Optional(Type.Enum(['Standard', 'SameDay'], { description: 'SameDay when not given.' })),
            },
            { additionalProperties: false, minProperties: 1, description: 'The simulated sender.' },
          ),
        ),
      },
      { additionalProperties: false },
    ),
    instantUsDeposit('fednow'),
    instantUsDeposit('rtp'),
    Type.Object(
      {
        network: Type.Literal('wire'),
        accountNumber: Digits(4, 17, 'The account number of the deposit method.'),
        amount: SimulatedAmount,
        remitter: Type.Optional(
          Type.Object(
            {
              name: text('The sender\'s full name.'),
              address1: Type.Optional(text('The sender\'s first address line.')),
              address2: Type.Optional(text('The sender\'s second address line.')),
              idCode: Type.Optional(text('The sender\'s identification code.')),
              identifier: Type.Optional(text('The sender\'s identifier.')),
            },
            { additionalProperties: false, description: 'The simulated sender.' },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  ]),
)
export type SimulateBankDepositBody = Static<typeof SimulateBankDepositBody>

const simulated = <N extends string, P extends Record<string, TSchema>>(network: N, properties: P, remitter: Record<string, TSchema>, remitterRequired: boolean) =>
  Type.Object(
    {
      network: Type.Literal(network),
      ...properties,
      asset: Type.String({ description: 'The asset deposited.' }),
      amount: Type.String({ description: 'The amount deposited.' }),
      remitter: remitterRequired
        ? Type.Object(remitter, { description: 'The simulated sender, with generated values where none were given.' })
        : Type.Optional(Type.Object(remitter, { description: 'The simulated sender, as given.' })),
    },
    { title: network.toUpperCase() },
  )
const SenderName = Type.String({ description: 'The sender\'s full name: the one given, else the acting user\'s.' })
const usSender = {
  name: SenderName,
  accountNumber: Type.String({ description: 'The sender\'s account number.' }),
  routingNumber: Type.String({ description: 'The sender\'s routing number.' }),
}
const PaymentReference = Type.Optional(Type.String({ description: 'The payment reference the sender wrote.' }))

export const SimulatedBankDeposit = Type.Union(
  [
    simulated('fps', { sortCode: Type.String(), accountNumber: Type.String(), reference: PaymentReference }, {
      name: SenderName,
      sortCode: Type.String({ description: 'The sender\'s sort code.' }),
      accountNumber: Type.String({ description: 'The sender\'s account number.' }),
    }, true),
    simulated('sepa', { iban: Type.String(), reference: PaymentReference }, {
      name: SenderName,
      bic: Type.String({ description: 'The sender\'s bank BIC.' }),
      iban: Type.String({ description: 'The sender\'s IBAN.' }),
    }, true),
    simulated('ach', { accountNumber: Type.String(), routingNumber: Type.String() }, {
      ...usSender,
      secCode: Type.Enum(['CCD', 'PPD', 'WEB'], { description: 'The ACH SEC code.' }),
      transactionType: Type.Enum(['Pull', 'Push']),
      serviceType: Type.Enum(['Standard', 'SameDay']),
    }, true),
    simulated('fednow', { accountNumber: Type.String() }, usSender, true),
    simulated('rtp', { accountNumber: Type.String() }, usSender, true),
    simulated('wire', { accountNumber: Type.String() }, {
      name: SenderName,
      address1: Type.Optional(Type.String()),
      address2: Type.Optional(Type.String()),
      idCode: Type.Optional(Type.String()),
      identifier: Type.Optional(Type.String()),
    }, false),
  ],
  { description: 'The simulated bank deposit, as it arrives, by network.' },
)
export type SimulatedBankDeposit = Static<typeof SimulatedBankDeposit>
export const SimulateBankDepositResponse = component('simulate-bank-deposit-response', Type.Object({ bankDeposit: SimulatedBankDeposit }))
