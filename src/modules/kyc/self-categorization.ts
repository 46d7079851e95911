import type { FormDefinition } from './forms.ts'

/**
 * The self-categorization statement UK consumers give before being offered high-risk investments (FCA COBS 4.12A):
 * the investor type they fit, and how much of their net assets they put, and will put, in such investments.
 *
 * Review (deterministic): a restricted investor is approved when both answers are `yes` (less than 10%) and both
 * percentages are below 10; otherwise the statement contradicts the type and is rejected. A high-net-worth
 * investor is approved (the percentages do not limit them). A rejected statement may be given again, up to
 * `maxAttempts` times in all.
 */

/** Changes whenever the questions change; answers to another version are refused. */
export const SELF_CATEGORIZATION_FORM_ID = 'f3b6c1d2-5a4e-4c8b-9e21-7d0a6b3c5e90'

/** A percentage from 0 to 100 with at most two decimals and no leading zero, as text (no float rounding on the way). */
export const PERCENTAGE_PATTERN = '^(?:100(?:\\.0{1,2})?|[1-9]?[0-9](?:\\.[0-9]{1,2})?)$'

const PROFILE = '#/properties/investor-profile/properties'

function yesNo(t: (key: string) => string, title: string) {
  return {
    type: 'string',
    title: t(title),
    oneOf: [
      { const: 'yes', title: t('answer.yes') },
      { const: 'no', title: t('answer.no') },
    ],
  }
}

/** Required when the answer it follows is `yes`, forbidden otherwise. */
function followsYes(answer: string, follower: string) {
  return {
    if: { properties: { [answer]: { const: 'yes' } }, required: [answer] },
    then: { required: [follower] },
    else: { not: { required: [follower] } },
  }
}

function shownWhenYes(answer: string) {
  return { effect: 'SHOW', condition: { scope: `${PROFILE}/${answer}`, schema: { const: 'yes' } } }
}

export const SELF_CATEGORIZATION_FORM: FormDefinition = {
  id: SELF_CATEGORIZATION_FORM_ID,
  maxAttempts: 30,
  categories: [
    {
      key: 'investor',
      schema: (t) => ({
        type: 'object',
        title: t('investor.title'),
        description: t('investor.description'),
        additionalProperties: false,
        properties: {
          type: {
            type: 'string',
            title: t('investor.type'),
            oneOf: [
              { const: 'restricted_investor', title: t('investor.type.restricted') },
              { const: 'high_net_worth_investor', title: t('investor.type.high-net-worth') },
            ],
          },
        },
        required: ['type'],
      }),
      uiSchema: (t) => ({
        type: 'Category',
        label: t('investor.title'),
        elements: [{ type: 'Control', label: t('investor.type'), scope: '#/properties/investor/properties/type' }],
      }),
    },
    {
      key: 'investor-profile',
      schema: (t) => ({
        type: 'object',
        title: t('profile.title'),
        description: t('profile.description'),
        additionalProperties: false,
        properties: {
          'invested-less-than-10-percent': yesNo(t, 'profile.invested-less'),
          'invested-percentage': { type: 'string', title: t('profile.invested-percentage'), pattern: PERCENTAGE_PATTERN },
          'invest-less-than-10-percent': yesNo(t, 'profile.invest-less'),
          'invest-percentage': { type: 'string', title: t('profile.invest-percentage'), pattern: PERCENTAGE_PATTERN },
          'investor-type-confirmation': { type: 'boolean', title: t('profile.confirmation'), const: true },
        },
        required: ['invested-less-than-10-percent', 'invest-less-than-10-percent', 'investor-type-confirmation'],
        allOf: [followsYes('invested-less-than-10-percent', 'invested-percentage'), followsYes('invest-less-than-10-percent', 'invest-percentage')],
      }),
      uiSchema: (t) => ({
        type: 'Category',
        label: t('profile.title'),
        elements: [
          { type: 'Control', label: t('profile.invested-less'), scope: `${PROFILE}/invested-less-than-10-percent` },
          { type: 'Control', label: t('profile.invested-percentage'), scope: `${PROFILE}/invested-percentage`, rule: shownWhenYes('invested-less-than-10-percent') },
          { type: 'Control', label: t('profile.invest-less'), scope: `${PROFILE}/invest-less-than-10-percent` },
          { type: 'Control', label: t('profile.invest-percentage'), scope: `${PROFILE}/invest-percentage`, rule: shownWhenYes('invest-less-than-10-percent') },
          { type: 'Control', label: t('profile.confirmation'), scope: `${PROFILE}/investor-type-confirmation` },
        ],
      }),
    },
  ],
  texts: {
    en: {
      'answer.yes': 'Yes',
      'answer.no': 'No',
      'investor.title': 'Investor categorization',
      'investor.description': 'Investors are of two types. Choose the one that fits you best.',
      'investor.type': 'Which type of investor are you?',
      'investor.type.restricted': 'Restricted investor',
      'investor.type.high-net-worth': 'High-net-worth investor',
      'profile.title': 'Investor profile',
      'profile.description': 'High-risk investments are, for example, cryptoassets, peer-to-peer loans and unlisted shares.',
      'profile.invested-less': 'In the past 12 months, have you invested less than 10% of your net assets in high-risk investments?',
      'profile.invested-percentage': 'What percentage of your net assets did you invest in high-risk investments in the past 12 months?',
      'profile.invest-less': 'In the next 12 months, do you intend to invest less than 10% of your net assets in high-risk investments?',
      'profile.invest-percentage': 'What percentage of your net assets do you intend to invest in high-risk investments in the next 12 months?',
      'profile.confirmation': 'I confirm that the investor type I chose applies to me.',
    },
    fr: {
      'answer.yes': 'Oui',
      'answer.no': 'Non',
      'investor.title': 'Catégorie d’investisseur',
      'investor.description': 'Il existe deux types d’investisseurs. Choisissez celui qui vous correspond le mieux.',
      'investor.type': 'Quel type d’investisseur êtes-vous ?',
      'investor.type.restricted': 'Investisseur restreint',
      'investor.type.high-net-worth': 'Investisseur fortuné',
      'profile.title': 'Profil d’investisseur',
      'profile.description': 'Sont à haut risque, par exemple, les cryptoactifs, les prêts entre particuliers et les actions non cotées.',
      'profile.invested-less': 'Au cours des 12 derniers mois, avez-vous investi moins de 10 % de votre patrimoine net dans des investissements à haut risque ?',
      'profile.invested-percentage': 'Quel pourcentage de votre patrimoine net avez-vous investi dans des investissements à haut risque au cours des 12 derniers mois ?',
      'profile.invest-less': 'Au cours des 12 prochains mois, comptez-vous investir moins de 10 % de votre patrimoine net dans des investissements à haut risque ?',
      'profile.invest-percentage': 'Quel pourcentage de votre patrimoine net comptez-vous investir dans des investissements à haut risque au cours des 12 prochains mois ?',
      'profile.confirmation': 'Je confirme que le type d’investisseur choisi s’applique à moi.',
    },
  },
  review: (answers) => {
    const investor = answers.investor as { type: string }
    const profile = answers['investor-profile'] as Record<string, string | boolean | undefined>
    if (investor.type === 'high_net_worth_investor') return { approved: true }
    const below10 = (answer: string, percentage: string) => profile[answer] === 'yes' && Number(profile[percentage]) < 10
    return { approved: below10('invested-less-than-10-percent', 'invested-percentage') && below10('invest-less-than-10-percent', 'invest-percentage') }
  },
}

/** The recurring job that returns expired statements to `pending` (src/jobs/schedules.ts). */
export const SELF_CATEGORIZATION_EXPIRY_SCHEDULE = 'kyc.self-categorization-expiry'

/**
 * Whether an approved statement's validity has ended at `at` (its `output.expiresAt` is not after it): the user must
 * then give the statement again. A statement without a readable `expiresAt` never ends.
 */
export function statementExpired(output: Readonly<Record<string, unknown>> | null, at: Date): boolean {
  if (output?.result !== 'approved' || typeof output.expiresAt !== 'string') return false
  const expiresAt = Date.parse(output.expiresAt)
  return !Number.isNaN(expiresAt) && expiresAt <= at.getTime()
}
