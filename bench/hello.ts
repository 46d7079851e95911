// The ceiling: a bare Fastify hello-world on the same machine and runtime as Tessera.
import Fastify from 'fastify'

const app = Fastify({ logger: false })
// HELLO_BUSY_US: CPU work (a busy wait) of this many µs per request before answering, to show what a server doing
// that much more than the bare hello-world reaches on this machine (bench/README.md, "What a ratio costs").
const busyMs = Number(process.env.HELLO_BUSY_US ?? 0) / 1000
app.get(
  '/',
  busyMs > 0
    ? async () => {
        const until = performance.now() + busyMs
        while (performance.now() < until);
        return { hello: 'world' }
      }
    : async () => ({ hello: 'world' }),
)

const port = Number(process.env.PORT ?? 3000)
await app.listen({ host: '127.0.0.1', port })
process.stdout.write('listening\n')

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  })
}
