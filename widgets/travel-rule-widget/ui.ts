import type { Layout as FrameLayout } from '../shared/ui.ts'

/** The states of the travel-rule form, beside the frame's own (`body[data-state]`). */
export type State = 'form' | 'sending'

export type Layout = FrameLayout<State>
