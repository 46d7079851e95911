import { createHash } from 'node:crypto'
import path from 'node:path'
import { build } from 'esbuild'

/** A built file, ready to serve. */
export interface BrowserAsset {
  body: Buffer
  contentType: string
  etag: string
}

/** The browser code Tessera serves, by bundle name: its entry point, relative to the repository root. */
export const BROWSER_ENTRIES: Readonly<Record<string, string>> = {
  sdk: 'widgets/sdk/index.ts',
  'payment-widget': 'widgets/payment-widget/main.ts',
  'payment-widget-return': 'widgets/payment-widget/return.ts',
  'kyc-widget': 'widgets/kyc-widget/main.ts',
  'travel-rule-widget': 'widgets/travel-rule-widget/main.ts',
  'webhook-portal': 'widgets/webhook-portal/main.ts',
  'example-payment-widget': 'examples/payment-widget/main.ts',
}

const ROOT = path.resolve(import.meta.dirname, '..', '..')

let building: Promise<ReadonlyMap<string, BrowserAsset>> | undefined

/**
 * Bundles the widgets, the SDK and the example page from their TypeScript sources with esbuild, in memory, once
 * per process (the first app to start builds; the others share it). Each entry gives `<name>.js`, and
 * `<name>.css` when it imports styles. Nothing is fetched from anywhere: the pages work offline.
 */
export function browserAssets(): Promise<ReadonlyMap<string, BrowserAsset>> {
  building ??= buildAll().catch((error: unknown) => {
    building = undefined
    throw error
  })
  return building
}

async function buildAll(): Promise<ReadonlyMap<string, BrowserAsset>> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: Object.fromEntries(Object.entries(BROWSER_ENTRIES)),
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    legalComments: 'none',
    write: false,
    outdir: 'hosted-assets',
    logLevel: 'silent',
  })
  const assets = new Map<string, BrowserAsset>()
  for (const file of result.outputFiles) {
    const name = path.basename(file.path)
    const body = Buffer.from(file.contents)
    const contentType = name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8'
    assets.set(name, { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` })
  }
  return assets
}
