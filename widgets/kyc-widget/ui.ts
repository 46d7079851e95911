import { h } from '../shared/dom.ts'
import { Layout as FrameLayout } from '../shared/ui.ts'
import { PROCESS_NAMES, STATUS_NAMES } from './text.ts'
import type { KycProcess, KycStatus } from './types.ts'

export type State = 'step'

/**
 * The KYC widget's frame (shared/ui.ts), with the progress through the session's processes between the title and the
 * status line, and one step shown at a time.
 */
export class Layout extends FrameLayout<State> {
  readonly progress: HTMLOListElement

  constructor(container: HTMLElement) {
    const progress = h('ol', { id: 'progress', class: 'kw-progress', 'aria-label': 'Progress', hidden: true })
    super(container, { beforeStatus: progress })
    this.progress = progress
  }

  /** Shows the steps of the session, none current yet. */
  setSteps(processes: readonly KycProcess[]): void {
    this.progress.replaceChildren(
      ...processes.map((process, index) =>
        h(
          'li',
          { class: 'kw-step', 'data-process': process, 'data-state': 'pending' },
          h('span', { class: 'kw-step-number', 'aria-hidden': 'true' }, String(index + 1)),
          h('span', { class: 'kw-step-name' }, PROCESS_NAMES[process]),
          h('span', { class: 'kw-step-state' }, STATUS_NAMES.pending),
        ),
      ),
    )
    this.progress.hidden = processes.length === 0
  }

  /** Where a step stands; `current` marks the step shown (`aria-current="step"`). */
  markStep(process: KycProcess, status: KycStatus, current = false): void {
    const item = this.progress.querySelector<HTMLLIElement>(`li[data-process="${process}"]`)
    if (!item) return
    for (const other of this.progress.querySelectorAll('li[aria-current]')) other.removeAttribute('aria-current')
    item.dataset.state = current ? 'current' : status
    if (current) item.setAttribute('aria-current', 'step')
    item.querySelector('.kw-step-state')!.textContent = current ? 'In progress' : STATUS_NAMES[status]
  }

  /** Replaces the step shown and moves the focus to its heading, so that keyboard and screen reader users start there. */
  showStep(...children: Node[]): void {
    this.content.replaceChildren(...children)
    const heading = this.content.querySelector<HTMLElement>('h2')
    heading?.setAttribute('tabindex', '-1')
    heading?.focus()
  }
}
