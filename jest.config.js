// Three tiers by suffix (STYLE.md rule 9): *.spec.ts pure, *.int.spec.ts real NATS + Postgres,
// *.e2e.spec.ts the whole stack started as a user starts it.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];
const moduleNameMapper = { '^@handplane/(.*)$': '<rootDir>/libs/$1/src/index.ts' };
const common = { transform: { '^.+\\.ts$': swc }, moduleNameMapper, testEnvironment: 'node', roots: ['<rootDir>/libs', '<rootDir>/services', '<rootDir>/e2e', '<rootDir>/tools', '<rootDir>/cli', '<rootDir>/bench', '<rootDir>/chaos'] };

module.exports = {
  // testTimeout is a global option in Jest 30 (ignored inside projects): integration and e2e need time.
  testTimeout: 120_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['**/*.spec.ts'], testPathIgnorePatterns: ['\\.int\\.spec\\.ts$', '\\.e2e\\.spec\\.ts$', '/node_modules/', '/dist/'] },
    { ...common, displayName: 'int', testMatch: ['**/*.int.spec.ts'], globalSetup: '<rootDir>/jest.global-setup.js' },
    { ...common, displayName: 'e2e', testMatch: ['**/*.e2e.spec.ts'], globalSetup: '<rootDir>/jest.global-setup.js' },
  ],
};
