#!/usr/bin/perl
# The in-sandbox agent: the one long-lived process of a bubblewrap sandbox (bwrap's init is pid 1,
# this is its child). It reads framed requests on stdin and answers framed results on stdout, so
# a tool call costs a pipe round trip plus the tool, never a new sandbox. Everything it touches it
# touches from inside the sandbox, as the sandbox's unprivileged user: a symlink planted by model
# code can only ever point at the sandbox's own view of the filesystem.
#
# Perl, because perl-base is essential on Debian (always under /usr), starts in ~2 ms, and needs
# no module beyond its core to multiplex pipes, fork, time out and kill process groups. Node
# starts in ~100 ms here, which alone would miss the provisioning target.
#
# Wire format (both directions): u32 big-endian length, then the payload. Payload: u8 type,
# u32 request id, then the fields of that type. src/protocol/frames.ts is the broker's definition;
# src/protocol/frames.test.ts runs this script and checks the exact bytes of every frame both ways.
#   broker -> agent  'R' run:  timeout_ms u32, cap u32, grace_ms u32, cwd str, argv strs, env strs
#                    'G' get:  path str, max_bytes u32, start_line u32, end_line u32 (0: all)
#                    'P' put:  path str, mode u32, content str
#                    'K' cancel: target u32 (the run request to end; its 'D' comes, timed out)
#   agent -> broker  'H' hello (id 0): pid u32, version str
#                    'D' done: kind u8 (0 exited, 1 signaled, 2 not started), code i32,
#                              timed_out u8, total u64, head str, tail str, error str
#                    'F' file: ok u8, error str, size u64, data str
#                    'W' written: ok u8, error str
# (str = u32 length + bytes; strs = u32 count + that many str.)
use strict;
# No `use warnings`, no Fcntl, no constant.pm: loading them triples perl's start-up time (~3 ms -> ~10 ms), and
# every sandbox pays it. The constants are Linux's (asm-generic/fcntl.h, sys/stat.h).
sub O_RDONLY () { 0 }
sub O_WRONLY () { 1 }
sub O_CREAT () { 0100 }
sub O_EXCL () { 0200 }
sub O_NONBLOCK () { 04000 }
sub F_GETFL () { 3 }
sub F_SETFL () { 4 }
sub S_ISREG { return ($_[0] & 0170000) == 0100000 }
# EINTR or EAGAIN in $! (numbers, not %!, which would load Errno.pm).
sub retryable_errno { my $e = $! + 0; return $e == 4 || $e == 11 }

my $VERSION = "1";
my $MAX_FRAME = 64 * 1024 * 1024;
my $CHUNK = 65536;
my $MAX_READS = 64;       # chunks drained per job per loop turn (4 MiB), so one job cannot starve the rest
my $REAP_TICK = 0.002;    # select timeout while a job's output ended but it is not reaped yet
my $IDLE_TICK = 0.05;     # select timeout while jobs run (catches exits whose SIGCHLD raced select)

$SIG{PIPE} = 'IGNORE';
$SIG{CHLD} = sub { };     # only there so select() returns EINTR when a child exits
binmode STDIN;
binmode STDOUT;

my %jobs;                 # id -> job
my $inbuf = '';

sub time_hr {
    # Monotonic enough for timeouts: perl-base has no Time::HiRes, select() gives sub-second sleeps,
    # and /proc/uptime is a monotonic clock with centisecond resolution.
    open(my $fh, '<', '/proc/uptime') or return time();
    my $line = <$fh>;
    close $fh;
    my ($up) = split / /, $line;
    return $up + 0;
}

sub send_frame {
    my ($payload) = @_;
    my $buf = pack('N', length $payload) . $payload;
    while (length $buf) {
        my $n = syswrite(STDOUT, $buf);
        if (!defined $n) {
            next if retryable_errno();
            exit 0;    # the broker is gone: nothing left to answer
        }
        substr($buf, 0, $n, '');
    }
}

# Kills a call's process group; returns the leader's wait status if this reaped it.
sub kill_group {
    my ($pgid) = @_;
    my $status;
    kill('KILL', $pgid);    # the leader too, in case it left its group (setsid)
    # A fork bomb keeps forking while we kill: repeat until the group is empty. The leader is our
    # child and others' zombies are reaped by bwrap's init; until reaped, kill() still finds them.
    for (1 .. 500) {
        $status = $? if waitpid($pgid, 1) == $pgid;    # 1 = WNOHANG
        last unless kill('KILL', -$pgid);
        select(undef, undef, undef, 0.001);
    }
    return $status;
}

sub finish_job {
    my ($job) = @_;
    delete $jobs{ $job->{id} };
    close($job->{fh}) if $job->{fh};
    my $st = $job->{status};
    my ($kind, $code) = (2, -1);
    if (defined $st) {
        if ($st & 127) { ($kind, $code) = (1, $st & 127) } else { ($kind, $code) = (0, $st >> 8) }
    }
    $kind = 2 if $job->{error} ne '';
    send_frame(pack('a N C l> C Q> N/a* N/a* N/a*', 'D', $job->{id}, $kind, $code,
        $job->{timed_out} ? 1 : 0, $job->{total}, $job->{head}, $job->{tail}, $job->{error}));
}

sub collect {
    my ($job, $data) = @_;
    $job->{total} += length $data;
    my $half = $job->{half};
    my $room = $half - length $job->{head};
    if ($room > 0) {
        $job->{head} .= substr($data, 0, $room);
        return if length($data) <= $room;
        $data = substr($data, $room);
    }
    $job->{tail} .= $data;
    my $over = length($job->{tail}) - $half;
    substr($job->{tail}, 0, $over, '') if $over > 0;
}

# Reads the fields of a request body in order: u32s, strs (u32 length + bytes), strs lists.
sub reader {
    my ($body) = @_;
    my $pos = 0;
    my $u32 = sub { my $v = unpack('N', substr($body, $pos, 4)); $pos += 4; return $v // 0; };
    my $str = sub { my $l = $u32->(); my $s = substr($body, $pos, $l); $pos += $l; return $s; };
    my $strs = sub { my $n = $u32->(); return map { $str->() } 1 .. $n; };
    return ($u32, $str, $strs);
}

sub start_run {
    my ($id, $body) = @_;
    my ($u32, $str, $strs) = reader($body);
    my ($timeout_ms, $cap, $grace_ms) = ($u32->(), $u32->(), $u32->());
    my $cwd = $str->();
    my @argv = $strs->();
    my @env = $strs->();
    my $job = { id => $id, head => '', tail => '', total => 0, half => int($cap / 2) || 1,
        timed_out => 0, error => '', status => undef, eof => 0, fh => undef };
    if (!@argv) { $job->{error} = 'empty command'; finish_job($job); return; }

    my ($r, $w);
    if (!pipe($r, $w)) { $job->{error} = "pipe: $!"; finish_job($job); return; }
    my $pid = fork();
    if (!defined $pid) {
        $job->{error} = "cannot start a process: $!";
        close $r; close $w;
        finish_job($job);
        return;
    }
    if ($pid == 0) {
        setpgrp(0, 0);
        # A memory bomb must be what the out-of-memory killer picks, not this agent.
        if (open(my $oom, '>', '/proc/self/oom_score_adj')) { print $oom "1000"; close $oom; }
        close $r;
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>&', $w);
        open(STDERR, '>&', $w);
        close $w;
        $SIG{PIPE} = 'DEFAULT';
        $SIG{CHLD} = 'DEFAULT';
        if (!chdir $cwd) { print STDERR "cannot enter $cwd: $!\n"; exit 126; }
        %ENV = map { my ($k, $v) = split /=/, $_, 2; ($k, $v // '') } @env;
        exec { $argv[0] } @argv;
        print STDERR "cannot run $argv[0]: $!\n";
        exit 127;
    }
    close $w;
    my $flags = fcntl($r, F_GETFL, 0);
    fcntl($r, F_SETFL, $flags | O_NONBLOCK) if defined $flags;
    my $t = time_hr();
    $job->{pid} = $pid;
    $job->{fh} = $r;
    $job->{deadline} = $t + $timeout_ms / 1000 + 0.01;    # the clock ticks in centiseconds: never early
    $job->{grace} = $grace_ms / 1000;
    $jobs{$id} = $job;
}

sub get_file {
    my ($id, $body) = @_;
    my ($path, $max, $from, $to) = unpack('N/a* N N N', $body);
    my $reply = sub { send_frame(pack('a N C N/a* Q> N/a*', 'F', $id, @_)) };
    my $fh;
    # O_NONBLOCK: opening a FIFO planted in place of a file must not hang the agent.
    if (!sysopen($fh, $path, O_RDONLY | O_NONBLOCK)) { return $reply->(0, "$path: $!", 0, ''); }
    my @st = stat($fh);
    if (!@st || !S_ISREG($st[2])) { close $fh; return $reply->(0, "$path is not a regular file", 0, ''); }
    my $size = $st[7];
    binmode $fh;
    if ($from == 0) {
        if ($size > $max) { close $fh; return $reply->(0, "too large", $size, ''); }
        my $data = '';
        while (1) {
            my $n = sysread($fh, $data, $CHUNK, length $data);
            last if !$n;
            if (length($data) > $max) { close $fh; return $reply->(0, "too large", length $data, ''); }
        }
        close $fh;
        return $reply->(1, '', $size, $data);
    }
    my ($line, $out) = (0, '');
    while (defined(my $l = readline($fh))) {
        $line++;
        next if $line < $from;
        last if $to && $line > $to;
        $out .= $l;
        if (length($out) > $max) { close $fh; return $reply->(0, "range too large", $size, ''); }
    }
    close $fh;
    return $reply->(1, '', $size, $out);
}

sub mkdirs {
    my ($dir) = @_;
    return 1 if $dir eq '' || -d $dir;
    my ($parent) = $dir =~ m{^(.*)/[^/]+/?$};
    mkdirs($parent) if defined $parent && $parent ne '';
    return mkdir($dir, 0755) || -d $dir;
}

sub put_file {
    my ($id, $body) = @_;
    my ($path, $mode, $content) = unpack('N/a* N N/a*', $body);
    my $reply = sub { send_frame(pack('a N C N/a*', 'W', $id, @_)) };
    my ($dir, $base) = $path =~ m{^(.*)/([^/]+)$};
    return $reply->(0, "$path: not a file path") if !defined $base;
    if (!mkdirs($dir)) { return $reply->(0, "$dir: $!"); }
    my @old = lstat($path);
    return $reply->(0, "$path is a directory") if @old && -d _;
    $mode = ($old[2] & 07777) if !$mode && @old && -f _;
    $mode ||= 0644;
    # Written beside the target and renamed over it: a reader never sees half a file, and a
    # symlink at $path is replaced, not followed.
    my $tmp = "$dir/.mh-write-$$-$id";
    my $fh;
    if (!sysopen($fh, $tmp, O_WRONLY | O_CREAT | O_EXCL, $mode & 07777)) { return $reply->(0, "$path: $!"); }
    binmode $fh;
    my $off = 0;
    while ($off < length $content) {
        my $n = syswrite($fh, $content, length($content) - $off, $off);
        if (!defined $n) { my $e = "$!"; close $fh; unlink $tmp; return $reply->(0, "$path: $e"); }
        $off += $n;
    }
    if (!close($fh)) { my $e = "$!"; unlink $tmp; return $reply->(0, "$path: $e"); }
    chmod($mode & 07777, $tmp);
    if (!rename($tmp, $path)) { my $e = "$!"; unlink $tmp; return $reply->(0, "$path: $e"); }
    return $reply->(1, '');
}

sub handle_frame {
    my ($payload) = @_;
    my ($type, $id) = unpack('a N', $payload);
    my $body = substr($payload, 5);
    if    ($type eq 'R') { start_run($id, $body) }
    elsif ($type eq 'G') { get_file($id, $body) }
    elsif ($type eq 'P') { put_file($id, $body) }
    elsif ($type eq 'K') {
        # Cancel run request `target`: its deadline passes now, so the job loop kills its group.
        my $job = $jobs{ unpack('N', $body) };
        $job->{deadline} = 0 if $job;
    }
    else { send_frame(pack('a N C l> C Q> N/a* N/a* N/a*', 'D', $id, 2, -1, 0, 0, '', '', "unknown request '$type'")) }
}

sub read_requests {
    my $n = sysread(STDIN, $inbuf, 1 << 20, length $inbuf);
    if (defined $n && $n == 0) {
        # The broker closed our stdin (released, or it died): end every call and leave.
        kill_group($_->{pid}) for values %jobs;
        exit 0;
    }
    return if !defined $n;
    while (length($inbuf) >= 4) {
        my $len = unpack('N', $inbuf);
        exit 2 if $len > $MAX_FRAME || $len < 5;
        last if length($inbuf) < 4 + $len;
        my $payload = substr($inbuf, 4, $len);
        substr($inbuf, 0, 4 + $len, '');
        handle_frame($payload);
    }
}

sub drain {
    my ($job) = @_;
    for (1 .. $MAX_READS) {
        my $data;
        my $n = sysread($job->{fh}, $data, $CHUNK);
        if (defined $n && $n > 0) { collect($job, $data); next; }
        $job->{eof} = 1 if defined $n || !retryable_errno();
        return;
    }
}

sub service_jobs {
    my ($readable) = @_;
    my $t = time_hr();
    for my $job (values %jobs) {
        drain($job) if !$job->{eof} && vec($readable, fileno($job->{fh}), 1);
        if (!defined $job->{status}) {
            my $got = waitpid($job->{pid}, 1);    # 1 = WNOHANG
            if ($got == $job->{pid}) {
                $job->{status} = $?;
                $job->{exited_at} = $t;
                drain($job) if !$job->{eof};    # what it wrote just before exiting
            }
        }
        if (!defined $job->{status} && $t >= $job->{deadline}) {
            $job->{timed_out} = 1;
            my $status = kill_group($job->{pid});
            $status = $? if !defined $status && waitpid($job->{pid}, 0) == $job->{pid};
            $job->{status} = $status // 9;
            $job->{exited_at} = $t;
            $job->{eof} = 1;    # whatever was left in the pipe dies with the group
        }
        next if !defined $job->{status};
        if ($job->{eof}) { finish_job($job); next; }
        # The command is over but something it started still holds the output open: give it a
        # moment, then end the call's process group (daemons that redirect their output, or
        # leave the group with setsid, are not touched).
        if ($t - $job->{exited_at} >= $job->{grace}) {
            kill_group($job->{pid});
            $job->{eof} = 1;
            finish_job($job);
        }
    }
}

send_frame(pack('a N N N/a*', 'H', 0, $$, $VERSION));
while (1) {
    my $rin = '';
    vec($rin, fileno(STDIN), 1) = 1;
    my $timeout;
    for my $job (values %jobs) {
        vec($rin, fileno($job->{fh}), 1) = 1 if !$job->{eof};
        my $left = $job->{deadline} - time_hr();
        $left = 0 if $left < 0;
        my $tick = ($job->{eof} || defined $job->{status}) ? $REAP_TICK : $IDLE_TICK;
        $left = $tick if $left > $tick;
        $timeout = $left if !defined $timeout || $left < $timeout;
    }
    my $rout;
    my $n = select($rout = $rin, undef, undef, $timeout);
    $rout = '' if $n <= 0;
    read_requests() if $n > 0 && vec($rout, fileno(STDIN), 1);
    service_jobs($rout) if %jobs;
}
