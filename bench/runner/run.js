// Runs a TypeScript bench without a build: node bench/runner/run.js bench/runner/<name>.bench.ts
// (scripts/ts-register.js compiles .ts on the fly and maps @handplane/* to libs/*/src).
const path = require('node:path');
require('../../scripts/ts-register.js').register();
const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bench/runner/run.js bench/runner/<name>.bench.ts\n');
  process.exit(2);
}
require(path.resolve(file));
