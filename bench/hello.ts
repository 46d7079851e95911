// The ceiling: a bare Fastify hello-world on the same machine and runtime as Tessera.
import Fastify from 'fastify'

const app = Fastify({ logger: false })
app.get('/', async () => ({ hello: 'world' }))

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
