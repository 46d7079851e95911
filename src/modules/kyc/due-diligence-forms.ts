import type { FormDefinition } from './forms.ts'

/**
 * The other questionnaires: customer due diligence, crypto risk assessment and tax details. Their reviews are
 * deterministic (documented in docs/kyc.md):
 * - customer due diligence is always accepted and scores the user: `high` when expected yearly deposits are
 *   above 100,000 GBP or the source of funds is `other`, `medium` from 25,000 GBP, `low` otherwise;
 * - the crypto risk assessment is approved when every answer shows the risk is understood (5 attempts);
 * - tax details are approved once complete.
 */

type T = (key: string) => string

const choice = (t: T, title: string, options: readonly string[]) => ({
  type: 'string',
  title: t(title),
  oneOf: options.map((option) => ({ const: option, title: t(`${title}.${option}`) })),
})

const category = (key: string, label: string, questions: readonly string[]) => (t: T) => ({
  type: 'Category',
  label: t(label),
  elements: questions.map((q) => ({ type: 'Control', label: t(`${key}.${q}`), scope: `#/properties/${key}/properties/${q}` })),
})

const DEPOSIT_RANGES = ['0-5000-GBP', '5000-25000-GBP', '25000-100000-GBP', '100000-plus-GBP'] as const
const INCOME_RANGES = ['0-20000-GBP', '20000-40000-GBP', '40000-60000-GBP', '60000-100000-GBP', '100000-plus-GBP'] as const
const SOURCES_OF_FUNDS = ['salary', 'savings', 'investments', 'inheritance', 'business-income', 'other'] as const
const ACTIVITIES = ['cryptocurrency_investing', 'foreign_exchange_trading', 'deposit_withdraw_crypto', 'international_payments_transfers'] as const
const EMPLOYMENT = ['employed', 'self-employed', 'unemployed', 'retired', 'student'] as const

const titles = (prefix: string, values: readonly string[], text: (v: string) => string) =>
  Object.fromEntries(values.map((v) => [`${prefix}.${v}`, text(v)]))

export const CUSTOMER_DUE_DILIGENCE_FORM: FormDefinition = {
  id: '0b9f4a7e-2c1d-4e5f-8a6b-3c2d1e0f9a8b',
  maxAttempts: 1_000,
  categories: [
    {
      key: 'intent',
      schema: (t) => ({
        type: 'object',
        title: t('intent'),
        additionalProperties: false,
        properties: {
          'expected-activities': {
            type: 'array',
            title: t('intent.expected-activities'),
            uniqueItems: true,
            minItems: 1,
            maxItems: ACTIVITIES.length,
            items: { type: 'string', oneOf: ACTIVITIES.map((a) => ({ const: a, title: t(`intent.expected-activities.${a}`) })) },
          },
        },
        required: ['expected-activities'],
      }),
      uiSchema: category('intent', 'intent', ['expected-activities']),
    },
    {
      key: 'financial-information',
      schema: (t) => ({
        type: 'object',
        title: t('financial-information'),
        additionalProperties: false,
        properties: {
          'source-of-funds': choice(t, 'financial-information.source-of-funds', SOURCES_OF_FUNDS),
          'annual-income-range': choice(t, 'financial-information.annual-income-range', INCOME_RANGES),
          'expected-annual-deposits-range': choice(t, 'financial-information.expected-annual-deposits-range', DEPOSIT_RANGES),
        },
        required: ['source-of-funds', 'annual-income-range', 'expected-annual-deposits-range'],
      }),
      uiSchema: category('financial-information', 'financial-information', ['source-of-funds', 'annual-income-range', 'expected-annual-deposits-range']),
    },
    {
      key: 'employment',
      schema: (t) => ({
        type: 'object',
        title: t('employment'),
        additionalProperties: false,
        properties: { status: choice(t, 'employment.status', EMPLOYMENT) },
        required: ['status'],
      }),
      uiSchema: category('employment', 'employment', ['status']),
    },
  ],
  texts: {
    en: {
      intent: 'How will you use the service?',
      'intent.expected-activities': 'What do you expect to do?',
      ...titles('intent.expected-activities', ACTIVITIES, (a) =>
        ({ cryptocurrency_investing: 'Trade cryptoassets', foreign_exchange_trading: 'Convert currencies', deposit_withdraw_crypto: 'Deposit or withdraw cryptoassets', international_payments_transfers: 'Transfer to other users' })[a]!,
      ),
      'financial-information': 'Financial information',
      'financial-information.source-of-funds': 'Where does the money you will use come from?',
      ...titles('financial-information.source-of-funds', SOURCES_OF_FUNDS, (s) => s.charAt(0).toUpperCase() + s.slice(1).replace('-', ' ')),
      'financial-information.annual-income-range': 'What is your yearly income?',
      ...titles('financial-information.annual-income-range', INCOME_RANGES, (r) => r.replace('-GBP', ' GBP').replace('-plus', ' or more').replace('-', ' to ')),
      'financial-information.expected-annual-deposits-range': 'How much do you expect to deposit per year?',
      ...titles('financial-information.expected-annual-deposits-range', DEPOSIT_RANGES, (r) => r.replace('-GBP', ' GBP').replace('-plus', ' or more').replace('-', ' to ')),
      employment: 'Employment',
      'employment.status': 'What is your employment status?',
      ...titles('employment.status', EMPLOYMENT, (s) => s.charAt(0).toUpperCase() + s.slice(1).replace('-', ' ')),
    },
  },
  review: (answers) => {
    const finance = answers['financial-information'] as Record<string, string>
    const deposits = finance['expected-annual-deposits-range']
    if (deposits === '100000-plus-GBP' || finance['source-of-funds'] === 'other') return { approved: true, score: 'high' }
    return { approved: true, score: deposits === '25000-100000-GBP' ? 'medium' : 'low' }
  },
}

/** Each question of the crypto risk assessment with its answers; the first answer is the one that shows understanding. */
const RISK_QUESTIONS = {
  'loss-tolerance': ['acceptable-loss', ['full_loss_possible', 'partial_loss_only', 'no_loss']],
  'volatility-understanding': ['expected-price-behaviour', ['highly_volatile', 'stable']],
  'regulatory-protection': ['compensation-coverage', ['no_coverage', 'fully_covered']],
  'complexity-acknowledgement': ['product-mechanics', ['complex_and_risky', 'simple_and_safe']],
} as const

export const CRYPTO_RISK_ASSESSMENT_FORM: FormDefinition = {
  id: '5d2e8c41-7b3a-4f69-9c0e-1a2b3c4d5e6f',
  maxAttempts: 5,
  // A consumer who fails an appropriateness assessment may not retake it for 24 hours (FCA COBS 10.2).
  retryDelayMs: 24 * 3600 * 1000,
  categories: Object.entries(RISK_QUESTIONS).map(([key, [question, options]]) => ({
    key,
    schema: (t: T) => ({
      type: 'object',
      title: t(key),
      additionalProperties: false,
      properties: { [question]: choice(t, `${key}.${question}`, options) },
      required: [question],
    }),
    uiSchema: category(key, key, [question]),
  })),
  texts: {
    en: {
      'loss-tolerance': 'Losses',
      'loss-tolerance.acceptable-loss': 'How much of the money you put in cryptoassets could you lose?',
      'loss-tolerance.acceptable-loss.full_loss_possible': 'All of it',
      'loss-tolerance.acceptable-loss.partial_loss_only': 'Some of it, never all',
      'loss-tolerance.acceptable-loss.no_loss': 'None of it',
      'volatility-understanding': 'Prices',
      'volatility-understanding.expected-price-behaviour': 'How do cryptoasset prices behave?',
      'volatility-understanding.expected-price-behaviour.highly_volatile': 'They can rise or fall sharply in a short time',
      'volatility-understanding.expected-price-behaviour.stable': 'They are stable',
      'regulatory-protection': 'Protection',
      'regulatory-protection.compensation-coverage': 'Are cryptoassets covered by a compensation scheme?',
      'regulatory-protection.compensation-coverage.no_coverage': 'No, they are not protected',
      'regulatory-protection.compensation-coverage.fully_covered': 'Yes, they are fully covered',
      'complexity-acknowledgement': 'Complexity',
      'complexity-acknowledgement.product-mechanics': 'How would you describe cryptoassets?',
      'complexity-acknowledgement.product-mechanics.complex_and_risky': 'Complex and high risk',
      'complexity-acknowledgement.product-mechanics.simple_and_safe': 'Simple and safe',
    },
  },
  review: (answers) => ({
    approved: Object.entries(RISK_QUESTIONS).every(([key, [question, options]]) => (answers[key] as Record<string, string>)[question] === options[0]),
  }),
}

const TIN_REASONS = ['country-does-not-issue-document', 'user-unable-to-obtain-document', 'law-does-not-require-document'] as const

export const TAX_DETAILS_FORM: FormDefinition = {
  id: '9e7d6c5b-4a39-4281-b7f6-e5d4c3b2a190',
  maxAttempts: 1_000,
  categories: [
    {
      key: 'taxResidency',
      schema: (t) => ({
        type: 'object',
        title: t('taxResidency'),
        additionalProperties: false,
        properties: {
          countries: { type: 'array', title: t('taxResidency.countries'), uniqueItems: true, minItems: 1, maxItems: 10, items: { type: 'string', pattern: '^[A-Z]{2}$' } },
        },
        required: ['countries'],
      }),
      uiSchema: category('taxResidency', 'taxResidency', ['countries']),
    },
    {
      key: 'taxIdentification',
      schema: (t) => ({
        type: 'object',
        title: t('taxIdentification'),
        additionalProperties: false,
        properties: {
          documents: {
            type: 'array',
            title: t('taxIdentification.documents'),
            minItems: 1,
            maxItems: 10,
            items: {
              type: 'object',
              additionalProperties: false,
              properties: {
                country: { type: 'string', pattern: '^[A-Z]{2}$' },
                type: { type: 'string', enum: ['tin'] },
                number: { type: 'string', pattern: '^\\S.*\\S$|^\\S$', maxLength: 50 },
                reason: { type: 'string', enum: [...TIN_REASONS] },
                justification: { type: 'string', pattern: '^\\S.*\\S$|^\\S$', maxLength: 1000 },
              },
              required: ['country', 'type'],
              oneOf: [{ required: ['number'] }, { required: ['reason'] }],
            },
          },
          certify: { type: 'boolean', title: t('taxIdentification.certify'), const: true },
        },
        required: ['documents', 'certify'],
      }),
      uiSchema: category('taxIdentification', 'taxIdentification', ['documents', 'certify']),
    },
  ],
  texts: {
    en: {
      taxResidency: 'Tax residency',
      'taxResidency.countries': 'In which countries are you a tax resident?',
      taxIdentification: 'Tax identification',
      'taxIdentification.documents': 'Your tax identification numbers (or why you have none)',
      'taxIdentification.certify': 'I confirm that the information provided is accurate.',
    },
  },
  review: () => ({ approved: true }),
}
