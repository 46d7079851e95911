// CPU while a benchmark phase runs, from /proc (shared by bench/withdrawals.ts and bench/cards.ts): this runner's (with its load generator), Tessera's, the PostgreSQL cluster's
// (when it runs on this machine), and the rest of the machine's busy time, which is other processes'. The one-second
// sample before the run (as the other benchmarks take) misses whatever starts later on a shared machine.
import fs from 'node:fs'
import os from 'node:os'

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100

/** A process's CPU time in ms, its own and that of its children it waited for; null when it is not on this machine. */
function processTimes(pid: number): { ms: number; parent: number } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    // After the command name (in parentheses, which may hold spaces): state, ppid, …; utime is field 14.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
    return { ms: (ticks * 1000) / TICKS_PER_SECOND, parent: Number(fields[1]) }
  } catch {
    return null
  }
}

/** The machine's stolen time in ms, from the first line of /proc/stat (USER_HZ ticks; steal is its eighth number). */
function stolenMs(): number | null {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/)
    const steal = Number(fields[8])
    return Number.isFinite(steal) ? (steal * 1000) / TICKS_PER_SECOND : null
  } catch {
    return null
  }
}

/** CPU time (ms) spent over a phase: by this runner (with the load generator), Tessera, PostgreSQL, everything else. */
export interface CpuSpent {
  runner: number
  tessera: number
  /** Null (and so `others`) when the cluster is not on this machine. */
  postgres: number | null
  others: number | null
  /**
   * Time the hypervisor gave this machine's CPUs to other guests (`steal` of /proc/stat; 0 on bare metal): on a
   * virtual machine, work the benchmark could not do, invisible in every process's times. Null where unreadable.
   */
  steal: number | null
  /** Wall time × CPUs: what `others` and `steal` are shares of. */
  available: number
}

export interface CpuMeter {
  /** Starts a measure; its `stop` resolves with what was spent meanwhile. */
  start(): { stop(): CpuSpent }
}

/**
 * Measures CPU time by process group, given Tessera's pid and the pid of a backend of the cluster (its parent is the
 * postmaster, whose reaped children's times /proc keeps with it).
 */
export function cpuMeter(tesseraPid: number, backendPid: number): CpuMeter {
  const postmaster = processTimes(backendPid)?.parent
  const postgres = (): number | null => {
    if (postmaster === undefined) return null
    // A backend that exits during the scan moves its time to the postmaster's reaped children's: read again then.
    for (let attempt = 0; ; attempt++) {
      const first = processTimes(postmaster)?.ms ?? 0
      let children = 0
      for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue
        const times = processTimes(Number(entry))
        if (times?.parent === postmaster) children += times.ms
      }
      const last = processTimes(postmaster)?.ms ?? 0
      if (last === first || attempt === 10) return last + children
    }
  }
  const sample = () => {
    const usage = process.cpuUsage()
    const machine = os.cpus().reduce((acc, { times }) => {
      acc.busy += times.user + times.nice + times.sys + times.irq
      acc.total += times.user + times.nice + times.sys + times.irq + times.idle
      return acc
    }, { busy: 0, total: 0 })
    return { machine, steal: stolenMs(), runner: (usage.user + usage.system) / 1000, tessera: processTimes(tesseraPid)?.ms ?? 0, postgres: postgres() }
  }
  return {
    start() {
      const before = sample()
      return {
        stop() {
          const after = sample()
          const runner = after.runner - before.runner
          const tessera = after.tessera - before.tessera
          const postgres = before.postgres === null || after.postgres === null ? null : after.postgres - before.postgres
          const busy = after.machine.busy - before.machine.busy
          const steal = before.steal === null || after.steal === null ? null : after.steal - before.steal
          // os.cpus() counts no stolen time: what the machine had is what it counted plus what was stolen.
          const counted = after.machine.total - before.machine.total
          return { runner, tessera, postgres, others: postgres === null ? null : Math.max(0, busy - runner - tessera - postgres), steal, available: counted + (steal ?? 0) }
        },
      }
    },
  }
}
