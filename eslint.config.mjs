// Lint: TypeScript rules everywhere, plus the determinism boundary of STYLE.md rule 1:
// domain code imports no framework, driver or Node builtin, and reads no clock or randomness.
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
const frameworkAndDrivers = ['@nestjs/*', '@nats-io/*', 'typeorm', 'pg', '@grpc/*', 'express', 'pino', '@opentelemetry/*', '@handplane/platform', '@handplane/proto', '@handplane/contracts', 'zod'];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'libs/proto/src/gen/**', 'coverage/**', '.data/**', '**/*.js', '**/*.mjs', 'artifacts/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false }],
      'no-restricted-imports': ['error', { patterns: [{ group: ['@handplane/*/src/*', '@handplane/*/dist/*'], message: 'import a lib through its public entry only' }] }],
    },
  },
  {
    files: ['libs/domain/**/*.ts', 'libs/kernel/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'domain code is pure: no Node builtins' })),
          patterns: [{ group: frameworkAndDrivers, message: 'domain code is pure: no framework, driver or wire code' }],
        },
      ],
      'no-restricted-globals': ['error', { name: 'process', message: 'pass configuration in' }, { name: 'crypto', message: 'ids arrive in commands' }, { name: 'setTimeout', message: 'time arrives in commands' }, { name: 'Buffer', message: 'no Node globals in domain code' }],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'time arrives in command metadata' },
        { object: 'Math', property: 'random', message: 'randomness arrives in commands' },
      ],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'time arrives in command metadata' }],
    },
  },
  {
    files: ['libs/domain/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'domain code is pure: no Node builtins' })),
          patterns: [
            { group: frameworkAndDrivers, message: 'domain code is pure: no framework, driver or wire code' },
            { group: ['@handplane/*', '!@handplane/kernel'], message: 'domain depends on kernel only' },
          ],
        },
      ],
    },
  },
);
