import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** A request a test receiver got. */
export interface Received {
  /** The request's path and query. */
  url: string
  headers: http.IncomingHttpHeaders
  body: string
  at: number
}

export type Answer = number | { status: number; headers?: Record<string, string> }

/**
 * A local webhook receiver for tests: records every request and answers what `answer` decides (200 by default),
 * so a test can make it fail for a while and then recover, or hang.
 */
export class Receiver {
  readonly received: Received[] = []
  /** The status to answer (with headers, when an object): 200 by default. */
  answer: (request: Received) => Answer | Promise<Answer> = () => 200
  private server: http.Server | null = null
  private waiters: { count: number; resolve: () => void }[] = []

  async start(): Promise<string> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const received = { url: request.url ?? '/', headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
        this.received.push(received)
        for (const waiter of this.waiters.filter((w) => this.received.length >= w.count)) waiter.resolve()
        this.waiters = this.waiters.filter((w) => this.received.length < w.count)
        Promise.resolve(this.answer(received)).then(
          (answer) => {
            const { status, headers = {} } = typeof answer === 'number' ? { status: answer } : answer
            response.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(status < 300 ? 'ok' : `refused with ${status}`)
          },
          () => response.destroy(),
        )
      })
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hooks`
  }

  /** Resolves once `count` requests arrived. */
  waitFor(count: number): Promise<void> {
    if (this.received.length >= count) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push({ count, resolve }))
  }

  /** The bodies received, parsed. */
  events(): { id: string; type: string; createdAt: string; data: Record<string, unknown> }[] {
    return this.received.map((r) => JSON.parse(r.body) as { id: string; type: string; createdAt: string; data: Record<string, unknown> })
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }
}
