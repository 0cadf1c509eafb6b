#!/usr/bin/env node
// Entry point installed as `handplane` (npx handplane …). The compiled CLI lives in ../dist.
require('../dist/main.js')
  .main(process.argv.slice(2))
  .then((code) => process.exit(code ?? 0))
  .catch((e) => {
    console.error(`handplane: ${e && e.message ? e.message : e}`);
    process.exit(1);
  });
