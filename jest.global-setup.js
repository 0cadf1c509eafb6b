// Migrates the template database once per run; each test file clones it.
module.exports = async () => {
  require('@swc/jest'); // make sure the transformer is installed before any worker starts
  const { register } = require('./scripts/ts-register.js');
  register();
  const { prepareTemplateDatabase } = require('./libs/testing/src/index.ts');
  await prepareTemplateDatabase();
};
