/**
 * Splits claimed jobs (in the order they were claimed) into runs for at most `slots` free slots: a job of a
 * one-job type is a run of its own; jobs of a type whose handler takes several join the open run of their type
 * until it is full. Jobs that fit in no run are left over, to be given back.
 */
export function formRuns<T extends { type: string }>(jobs: readonly T[], slots: number, maxJobsOf: (type: string) => number): { runs: T[][]; leftOver: T[] } {
  const runs: T[][] = []
  const leftOver: T[] = []
  const open = new Map<string, T[]>()
  for (const job of jobs) {
    const max = maxJobsOf(job.type)
    const run = open.get(job.type)
    if (run && run.length < max) {
      run.push(job)
    } else if (runs.length < slots) {
      const started = [job]
      runs.push(started)
      if (max > 1) open.set(job.type, started)
    } else {
      leftOver.push(job)
    }
  }
  return { runs, leftOver }
}
