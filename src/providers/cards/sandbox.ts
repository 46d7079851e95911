import type { CardDeclineReason, CardProcessor, CardToVerify, CardVerification } from './card-processor.ts'

/**
 * Test card numbers whose verification the sandbox issuer refuses, and why (docs/sandbox.md). Every other number
 * of the BIN table verifies. Chosen apart from the numbers that select withdrawal outcomes, so that those cards
 * can be linked first.
 */
export const SANDBOX_VERIFICATION_DECLINES: Readonly<Record<string, CardDeclineReason>> = {
  '4000000000000002': 'card-declined-by-bank',
  '4000000000000069': 'card-expired',
  '4000000000000036': 'card-permanently-declined-by-bank',
  '4000000000000044': 'card-unauthorized',
  '4000000000000010': 'card-unsupported',
  '4000000000000119': 'unspecified-error',
}

/** The security code the sandbox issuer says does not match the card (any other code matches). */
export const SANDBOX_WRONG_SECURITY_CODE = '000'

/** The sandbox card processor: deterministic answers from the test numbers; nothing is kept. */
export class SandboxCardProcessor implements CardProcessor {
  async verify(card: CardToVerify): Promise<CardVerification> {
    const declined = SANDBOX_VERIFICATION_DECLINES[card.number]
    if (declined) return { status: 'declined', reason: declined }
    if (card.securityCode === SANDBOX_WRONG_SECURITY_CODE) return { status: 'declined', reason: 'card-unauthorized' }
    return { status: 'approved' }
  }
}
