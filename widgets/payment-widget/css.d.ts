// The entry imports its stylesheet for esbuild, which emits it as a separate CSS bundle.
declare module '*.css' {}
