// Bundles the status page's browser code (this folder) into dist/status-page/, which the
// operator serves as it is: one script and one style sheet with hashed names, no inline
// script or style (the page's Content-Security-Policy allows none), no source maps, nothing
// fetched from a CDN. Run by the package's build (`npm run build:page`).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // Relative URLs: the page works behind a path prefix (a kubectl proxy path) as at the root.
  base: './',
  logLevel: 'warn',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/status-page/', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    cssCodeSplit: false,
    // Nothing inlined as a data: URL (the policy has no data: source).
    assetsInlineLimit: 0,
    modulePreload: false,
    reportCompressedSize: false,
  },
});
