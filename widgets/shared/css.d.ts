// Each widget's entry imports its stylesheet for esbuild, which emits it as a separate CSS bundle (with the
// `@import`ed shared/base.css inlined in it).
declare module '*.css' {}
