// A tiny require hook so that scripts and jest global setup can load the TypeScript sources
// without a build: .ts files are compiled by @swc/core, @handplane/* resolve to libs/*/src.
const Module = require('node:module');
const path = require('node:path');
const fs = require('node:fs');

let registered = false;
function register() {
  if (registered) return;
  registered = true;
  const swc = require('@swc/core');
  const root = path.resolve(__dirname, '..');
  const origResolve = Module._resolveFilename;
  Module._resolveFilename = function (request, parent, ...rest) {
    const m = /^@handplane\/([^/]+)$/.exec(request);
    if (m) return path.join(root, 'libs', m[1], 'src', 'index.ts');
    return origResolve.call(this, request, parent, ...rest);
  };
  require.extensions['.ts'] = (module, filename) => {
    const src = fs.readFileSync(filename, 'utf8');
    const out = swc.transformSync(src, {
      filename,
      jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { legacyDecorator: true, decoratorMetadata: true }, target: 'es2022' },
      module: { type: 'commonjs' },
      sourceMaps: 'inline',
    });
    module._compile(out.code, filename);
  };
}
module.exports = { register };
// `node -r ./scripts/ts-register.js file.ts` (benches): registering on preload makes the main .ts loadable.
if (module.parent && module.parent.id === 'internal/preload') register();
