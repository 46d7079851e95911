import type { Layout as FrameLayout } from '../shared/ui.ts'

/** The states of the payment widget's flows, beside the frame's own (`body[data-state]`). */
export type State = 'authorizing' | 'challenge' | 'confirming' | 'select'

export type Layout = FrameLayout<State>
