/**
 * The sandbox's init, run as `perl -e INIT_SCRIPT -- <bash> -c <command>`.
 *
 * Why a separate init at all: the process that starts a command must outlive the runner (a runner
 * restart must not end commands) and must record the command's exact end (exit code or signal) where
 * a later runner can read it. Inside a PID namespace it must also be pid 1: forward SIGTERM to every
 * process of the namespace (pid 1 only gets the signals it handles) and reap every orphan (no
 * zombies). Why Perl: it is part of every Debian/Ubuntu base system (perl-base is Essential), starts
 * in a few milliseconds without modules, and reports a wait status exactly (a shell's `$?` cannot
 * tell `exit 137` from SIGKILL). No module is loaded on purpose: each costs milliseconds per command.
 *
 * Protocol on fd 3 (a socket pair with the runner): the runner writes `<length>\n` and then
 * NUL-separated fields: mode ("ns" | "group"), the count and the paths of the cgroup.procs files to
 * join, the count and the `NAME=value` entries of the command's environment (never on disk, never in
 * argv), then the command's argv. The init answers `warn <text>` lines, then `ok <pid-ns inode>
 * <pid of the command>` once the command runs (or `err <text>`), and closes fd 3.
 * fd 4 is the status file: `exit <code>` or `signal <number>` once the command and everything it
 * left behind are gone. stdout and stderr are the raw output files; both fds are close-on-exec so
 * the command never sees them.
 * stdin: fd 0 is the command's stdin (it inherits it). With the mode `ns+hold` / `group+hold`, fd 0
 * is the read end of a FIFO, and the init opens it again read-write through /proc/self/fd/0 before
 * it starts the command: a writer only the init holds (close-on-exec, so neither the command nor a
 * launcher in between keeps one), so the command does not read end-of-file while no runner holds
 * the FIFO open (a runner restart). SIGWINCH (never forwarded to the command) makes the init drop
 * it: the runner sends it when stdin is closed on request, and the command reads end-of-file once
 * the runner's own end is closed too.
 *
 * Safety: `kill(-1, …)` reaches every process the caller may signal. It is used only in "ns" mode,
 * and "ns" mode refuses to run unless this process is pid 1 (of the new namespace).
 */
export const INIT_SCRIPT = String.raw`
my ($F_SETFD, $FD_CLOEXEC, $EINTR) = (2, 1, 4);
open(my $ctl, '+<&=', 3) or exit 120;
open(my $st, '+<&=', 4) or exit 120;
fcntl($ctl, $F_SETFD, $FD_CLOEXEC);
fcntl($st, $F_SETFD, $FD_CLOEXEC);
my $hold;
$SIG{WINCH} = sub { if ($hold) { close($hold); undef $hold } };
sub tell_runner { syswrite($ctl, $_[0]) }
sub fail { tell_runner("err $_[0]\n"); exit 121 }
sub read_exact {
  my $n = $_[0]; my $buf = '';
  while (length($buf) < $n) {
    my $r = sysread($ctl, $buf, $n - length($buf), length($buf));
    if (!defined $r) { next if $! == $EINTR; fail("cannot read the launch request: $!") }
    fail('launch request cut short') if $r == 0;
  }
  return $buf;
}
my $hdr = '';
$hdr .= read_exact(1) while $hdr !~ /\n\z/ && length($hdr) < 20;
fail('bad launch request') unless $hdr =~ /\A(\d+)\n\z/;
my @f = split(/\0/, read_exact($1), -1);
my $mode = shift @f;
fail('bad mode') unless defined $mode && $mode =~ /\A(ns|group)(\+hold)?\z/;
$mode = $1;
if ($2) {
  open($hold, '+<', '/proc/self/fd/0') or fail("cannot hold the stdin FIFO: $!");
  fcntl($hold, $F_SETFD, $FD_CLOEXEC);
}
fail('ns mode needs pid 1 of a new PID namespace') if $mode eq 'ns' && $$ != 1;
my @cg = splice(@f, 0, shift(@f));
my @env = splice(@f, 0, shift(@f));
my @argv = @f;
fail('no command') unless @argv;
for my $p (@cg) {
  if (open(my $h, '>', $p)) { tell_runner("warn cannot join $p: $!\n") unless syswrite($h, "0\n"); close($h) }
  else { tell_runner("warn cannot open $p: $!\n") }
}
%ENV = ();
for my $e (@env) { my ($k, $v) = split(/=/, $e, 2); $ENV{$k} = $v }
my $main = fork();
fail("fork: $!") unless defined $main;
if ($main == 0) {
  setpgrp(0, 0) if $mode eq 'group';
  exec { $argv[0] } @argv;
  syswrite(STDERR, "sandbox: cannot run $argv[0]: $!\n");
  exit 127;
}
setpgrp($main, $main) if $mode eq 'group';
my $target = ($mode eq 'ns' && $$ == 1) ? -1 : -$main;
for my $s (qw(TERM INT HUP QUIT USR1 USR2)) { $SIG{$s} = sub { kill($s, $target) } }
my $ns = readlink('/proc/self/ns/pid');
$ns = (defined $ns && $ns =~ /(\d+)/) ? $1 : '';
tell_runner("ok $ns $main\n");
close($ctl);
my $status;
while (1) {
  my $w = waitpid(-1, 0);
  if ($w == $main) { $status = $?; last }
  if ($w == -1) { next if $! == $EINTR; last }
}
$status = 255 << 8 unless defined $status;
kill('KILL', $target);
if ($target == -1) { while (1) { my $w = waitpid(-1, 0); last if $w == -1 && $! != $EINTR } }
my $sig = $status & 127;
sysseek($st, 0, 0);
syswrite($st, $sig ? "signal $sig\n" : 'exit ' . ($status >> 8) . "\n");
close($st);
exit($sig ? 128 + $sig : $status >> 8);
`;

/** What the init wrote into the status file, parsed. Null while it is empty or torn. */
export function parseStatus(text: string): { exitCode: number | null; signal: number | null } | null {
  const m = /^(exit|signal) (\d+)\n/.exec(text);
  if (!m) return null;
  return m[1] === 'exit' ? { exitCode: Number(m[2]), signal: null } : { exitCode: null, signal: Number(m[2]) };
}

/** The launch request sent on fd 3 (see INIT_SCRIPT). */
export function encodeLaunchRequest(mode: 'ns' | 'group' | 'ns+hold' | 'group+hold', cgroupProcs: readonly string[], env: Readonly<Record<string, string>>, argv: readonly string[]): Buffer {
  const entries = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const fields = [mode, String(cgroupProcs.length), ...cgroupProcs, String(entries.length), ...entries, ...argv];
  const payload = Buffer.from(fields.join('\0'), 'utf8');
  return Buffer.concat([Buffer.from(`${payload.length}\n`), payload]);
}
