/** The `handplane` CLI. Commands are added by issue 7; until then it says so honestly. */
export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write('usage: handplane <command> [options]\n');
    return 0;
  }
  process.stderr.write(`handplane: unknown command ${JSON.stringify(argv[0])}; see handplane --help\n`);
  return 2;
}
