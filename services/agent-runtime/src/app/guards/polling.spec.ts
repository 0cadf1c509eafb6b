import { classifyPolling } from './polling';

const pollOnly = (command: string) => classifyPolling(command).pollOnly;

describe('G3 polling classification', () => {
  it.each([
    'sleep 30',
    'sleep 5 && ps aux',
    'ps aux | grep node | grep -v grep',
    'pgrep -f build >/dev/null',
    'pidof make',
    'jobs; wait',
    'top -b -n 1 | head -20',
    'watch -n 5 ls',
    'kill -0 1234 && echo alive',
    'tail -f build.log',
    'while ! curl -sf localhost:3000; do sleep 1; done',
    'until [ -f /tmp/done ]; do sleep 2; done',
    'while pgrep -f build >/dev/null; do sleep 5; echo waiting; done',
    'for i in $(seq 1 30); do curl -sf x && break; sleep 2; done',
    'timeout 60 bash -c "until test -e out; do sleep 1; done"',
    'f() { sleep 5; ps; }; f',
    'while true; do :; done',
    'echo "$(ps aux)"',
    'read -t 30 x',
  ])('only polls: %s', (command) => expect(pollOnly(command)).toBe(true));

  it.each([
    'make',
    'sleep 2; npm test',
    'npm test && sleep 1',
    'echo hello',
    'cat build.log',
    'curl -s localhost:3000/health',
    'curl -X POST localhost/deploy; sleep 1',
    'kill 1234; sleep 1',
    'sleep 5 > out.txt',
    'while read line; do echo "$line"; done < list.txt',
    'for f in *.txt; do wc -l "$f"; done',
    'ps aux > procs.txt',
    "sed -i 's/a/b/' f; sleep 1",
    'bash ./wait-for-it.sh',
    'echo $(make)',
  ])('does work: %s', (command) => expect(pollOnly(command)).toBe(false));

  it('names what polls', () => {
    expect(classifyPolling('until curl -s x; do sleep 1; done').polls).toEqual(['sleep', 'until loop']);
    expect(classifyPolling('kill -0 1').polls).toEqual(['kill -0']);
  });
});
