/** The shapes every hosted widget shares: what it posts in `error`, and the SDK's `options` in `init`. */

/** What a widget posts to the host in an `error` message; also Tessera's error body (`{code, message, details}`). */
export interface WidgetError {
  code: string
  message?: string
  details?: Record<string, unknown>
}

export interface ThemeOption {
  appearance?: 'light' | 'dark'
  primary?: string
  primaryForeground?: string
}

/** The SDK's `options`, as `init` carries them. */
export interface WidgetOptions {
  debug?: boolean
  theme?: ThemeOption
}
