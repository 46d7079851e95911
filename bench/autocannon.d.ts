// autocannon ships no type declarations; this covers the part of its programmatic API that bench/ uses.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  /** One request of a sequence each connection sends in turn. */
  export interface RequestParams {
    method?: Options['method']
    path?: string
    headers?: Record<string, string>
    body?: string
    /** Called before each send of this request; returns the request to send. */
    setupRequest?: (request: RequestParams) => RequestParams
  }

  export interface Options {
    url: string
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
    headers?: Record<string, string>
    body?: string
    /** Seconds. */
    duration?: number
    /** Requests to send in all; when set, `duration` is ignored. */
    amount?: number
    /** The sequence of requests each connection sends, instead of `method`/`headers`/`body`. */
    requests?: RequestParams[]
    connections?: number
    pipelining?: number
    /** Seconds before a request counts as timed out. */
    timeout?: number
    title?: string
  }

  /** Distribution of a measure: per-second samples for requests, per-request values (ms) for latency. */
  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
    p99_9: number
  }

  export interface Result {
    title?: string
    url: string
    connections: number
    pipelining: number
    /** Seconds actually run. */
    duration: number
    errors: number
    timeouts: number
    non2xx: number
    '2xx': number
    '4xx': number
    '5xx': number
    statusCodeStats: Record<string, { count: number }>
    latency: Histogram
    requests: Histogram & { sent: number }
    throughput: Histogram
  }

  export interface Instance extends EventEmitter {
    stop(): void
  }

  function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance
  export default autocannon
}
