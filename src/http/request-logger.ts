import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'
import type { Bindings, ChildLoggerOptions, Level, LogFn } from 'pino'

/**
 * Fastify makes a child logger for every request, bound to its id. Most requests write nothing at the levels a
 * deployment enables (Tessera logs failures, not successes, below `info`), so the child is made when a line is
 * first written at an enabled level, and never otherwise. It is then the very child Fastify would have made: the
 * same bindings, serializers and redaction, so what is written is written exactly as before.
 */
export const lazyChildLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = function lazyChildLoggerFactory(logger, bindings, options) {
  const parent = logger as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }
  // A route with a level of its own, or a logger that cannot say which levels it writes (Fastify's silent one): made
  // at once, as Fastify does.
  if (typeof parent.isLevelEnabled !== 'function' || (options.level !== undefined && options.level !== parent.level)) return logger.child(bindings, options)
  return new LazyChildLogger(parent as FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, bindings, options)
}

class LazyChildLogger implements FastifyBaseLogger {
  private readonly parent: FastifyBaseLogger & { isLevelEnabled(level: string): boolean }
  private readonly bindings: Bindings
  private readonly options: ChildLoggerOptions
  private made: FastifyBaseLogger | null = null

  constructor(parent: FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, bindings: Bindings, options: ChildLoggerOptions) {
    this.parent = parent
    this.bindings = bindings
    this.options = options
  }

  private real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }

  get level(): string {
    return this.made?.level ?? this.parent.level
  }

  set level(level: string) {
    this.real().level = level
  }

  private write(level: Level, args: Parameters<LogFn>): void {
    if (this.made !== null) (this.made[level] as (...a: unknown[]) => void)(...args)
    else if (this.parent.isLevelEnabled(level)) (this.real()[level] as (...a: unknown[]) => void)(...args)
  }

  // Methods of the class, not arrow functions in fields: a request that logs nothing allocates one object, not seven
  // closures with it. Called as `request.log.info(…)`, like pino's own.
  fatal(...args: Parameters<LogFn>): void {
    this.write('fatal', args)
  }

  error(...args: Parameters<LogFn>): void {
    this.write('error', args)
  }

  warn(...args: Parameters<LogFn>): void {
    this.write('warn', args)
  }

  info(...args: Parameters<LogFn>): void {
    this.write('info', args)
  }

  debug(...args: Parameters<LogFn>): void {
    this.write('debug', args)
  }

  trace(...args: Parameters<LogFn>): void {
    this.write('trace', args)
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options)
  }
}
