/**
 * `node:fs`, taken from Node.js's module registry rather than imported.
 * An ES module that imports `node:fs` gets a namespace of all its exports,
 * `fs.promises` among them, and reading that one loads fourteen more
 * modules (`fs/promises`, readline, the REPL's history, watchers) into
 * every proxy process, about 1 MiB that nothing here uses.
 *
 * @module
 */
export const fs = process.getBuiltinModule('node:fs');
