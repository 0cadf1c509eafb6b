import { findDetachments } from './detachment';

const forms = (command: string) => {
  const r = findDetachments(command);
  if ('error' in r) throw new Error(`unexpected parse error: ${r.error}`);
  return r.found.map((d) => d.form);
};

describe('G2 detachment analysis (mvdan-sh)', () => {
  describe('accepts commands that stay in the foreground', () => {
    it.each([
      ['a quoted ampersand', "echo '&'"],
      ['an ampersand inside double quotes', 'echo "a & b"'],
      ['an escaped ampersand', 'echo a \\& b'],
      ['&& and ||', 'make && make test || echo failed'],
      ['a pipeline, also with |&', 'make 2>&1 | tee build.log; make |& cat'],
      ['redirections with & in them', 'cmd >out 2>&1; cmd &>all.log; cmd 2>&-'],
      ['the word nohup as an argument', 'echo nohup; grep -r setsid src/'],
      ['a process substitution', 'diff <(sort a) <(sort b)'],
      ['a heredoc for a non-shell command with & in its text', "cat <<'EOF'\nrun me & forget\nEOF"],
      ['screen and tmux without detaching', 'screen -ls; tmux ls; tmux attach -t x'],
      ['bash running a script file', 'bash ./build.sh --fast'],
      ['command -v nohup (a lookup, not a run)', 'command -v nohup'],
      ['a function and loop doing foreground work', 'f() { make "$1"; }; for t in a b; do f "$t"; done'],
      ['a literal bash -c string without detachment', "bash -c 'cd src && make -j4'"],
      ['a variable holding a harmless command', 'X=make; $X all'],
    ])('%s', (_, command) => expect(forms(command)).toEqual([]));
  });

  describe('refuses each detachment form', () => {
    it.each([
      ['a trailing &', 'npm run build &', ['&']],
      ['& between commands', 'sleep 100 & echo started', ['&']],
      ['& inside a subshell', '(sleep 100 &)', ['&']],
      ['& inside a command substitution', 'x=$(sleep 1 &)', ['&']],
      ['& inside backquotes in double quotes', 'echo "`sleep 1 &`"', ['&']],
      ['& inside a process substitution', 'cat <(sleep 9 &)', ['&']],
      ['& inside a function body', 'f() { sleep 1 & }; f', ['&']],
      ['& inside a brace group of a loop', 'for i in 1 2; do { work $i & }; done', ['&']],
      ['& inside a parameter default', 'echo ${X:-$(nohup y)}', ['nohup']],
      ['nohup', 'nohup ./server', ['nohup']],
      ['nohup by absolute path', '/usr/bin/nohup ./server', ['nohup']],
      ['quoted and escaped nohup', "'nohup' a; n\\ohup b; \"no\"hup c", ['nohup', 'nohup', 'nohup']],
      ['ANSI-C quoted nohup', "$'\\x6eohup' ./server", ['nohup']],
      ['nohup through a variable', 'X=nohup; $X ./server', ['nohup']],
      ['disown', 'sleep 1; disown -a', ['disown']],
      ['setsid behind sudo', 'sudo -u bob setsid -f ./server', ['setsid']],
      ['nohup behind env and timeout', 'env A=1 timeout 5s nohup ./server', ['nohup']],
      ['coproc', 'coproc sleep 100', ['coproc']],
      ['named coproc', 'coproc srv { ./server; }', ['coproc']],
      ['daemonize', 'daemonize /usr/bin/server', ['daemonize']],
      ['start-stop-daemon', 'start-stop-daemon --start --background --exec /srv', ['start-stop-daemon']],
      ['screen -dmS', 'screen -dmS build make', ['screen -d']],
      ['screen -d -m', 'screen -d -m make', ['screen -d']],
      ['tmux new -d', 'tmux new -d -s build make', ['tmux new -d']],
      ['tmux new-session -d after a global option', 'tmux -L sock new-session -d make', ['tmux new -d']],
      ['tmux run -b', 'tmux run -b make', ['tmux new -d']],
      ['at', 'echo make | at now + 1 minute', ['at']],
      ['batch', 'batch <<<"make"', ['batch']],
      ['systemd-run', 'systemd-run --user make', ['systemd-run']],
      ['bg', 'make; bg %1', ['bg']],
      ["trap '' HUP", "trap '' HUP; ./server", ["trap '' HUP"]],
      ['nested bash -c', "bash -c 'sleep 100 &'", ['&']],
      ['sh -lc with options', "sh -e -lc 'nohup x'", ['nohup']],
      ['bash -c inside sh -c inside eval', `eval "sh -c \\"bash -c 'setsid x'\\""`, ['setsid']],
      ['eval', "eval 'a & b'", ['&']],
      ['a heredoc fed to bash', 'bash <<EOF\nsleep 1 &\nEOF', ['&']],
      ['a here-string fed to sh', "sh <<< 'nohup x'", ['nohup']],
      ['literal code piped into bash', "echo 'sleep 9 &' | bash", ['&']],
      ['find -exec nohup', 'find . -name x -exec nohup rm {} \\;', ['nohup']],
      ['xargs nohup', 'ls | xargs -n1 nohup echo', ['nohup']],
      ['su -c', "su bob -c 'nohup x'", ['nohup']],
      ['watch running a detaching command', "watch -n 1 'sleep 1 &'", ['&']],
      ['several forms at once', 'nohup a & setsid b', ['&', 'nohup', 'setsid']],
    ])('%s', (_, command, expected) => expect(forms(command)).toEqual(expected));
  });

  describe('refuses what it cannot check', () => {
    it('a bash -c string built at run time', () => expect(forms('bash -c "$CMD"')).toEqual(['unverifiable']));
    it('eval of a computed string', () => expect(forms('eval "$(curl -s x)"')).toEqual(['unverifiable']));
    it('a command name computed by a substitution', () => expect(forms('$(echo nohup) ./server')).toEqual(['computed command name']));
    it('unparsable input, with the parser message', () => {
      expect(findDetachments('echo $(')).toEqual({ error: expect.stringContaining('without matching ( with )') });
      expect(findDetachments("echo 'unterminated")).toEqual({ error: expect.stringContaining('closing quote') });
      expect(findDetachments('if then')).toHaveProperty('error');
    });
    it('an unparsable nested string, saying where it was', () => {
      expect(findDetachments("bash -c 'echo $('")).toEqual({ error: expect.any(String), at: expect.stringContaining('bash -c') });
    });
  });

  it('reports where each form is', () => {
    const r = findDetachments('make && (sleep 100 &)');
    expect(r).toEqual({ found: [{ form: '&', at: 'sleep 100 &', why: expect.stringContaining('background') }] });
  });
});
