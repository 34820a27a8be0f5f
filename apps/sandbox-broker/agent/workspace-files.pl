#!/usr/bin/perl
# Reads and writes a sandbox's /workspace for its snapshots (src/workspaces/sandbox-files.ts). The
# broker runs it with nsenter inside the sandbox's user and mount namespaces, as the sandbox's own
# user (65534): everything it touches it touches as the sandbox would, so a symlink planted by
# model code points at the sandbox's own view of the filesystem, and a restore can write nothing
# the sandbox could not. Perl, as the agent (sandbox-agent.pl), and only its core.
#
# Wire format (both directions): a record is fields, each a u32 big-endian length then the bytes;
# the first field is the type, and the type says how many fields follow:
#   'd' mode path              a directory (modes are octal)
#   'l' path target            a symbolic link
#   'f' mode path key          a regular file unchanged since the scan that gave it `key`
#   'F' mode path key          a regular file whose content follows, as pieces (u32 length + bytes),
#                              ended by a zero length
#   'k' path key               (restore's answer) a file written, and its key now
#   'Z'                        the end
# key = "size/mtime/ctime/inode": what says a file has not changed since the scan that gave it.
#
#   scan:    stdin: (path NUL key NUL)* of the previous scan; stdout: every entry, contents only of
#            files whose key differs ('F'), then 'Z'.
#   restore: stdin: 'd', 'l' and 'F' records (keys ignored, mtimes as 'F' mode's fourth field: see
#            below), then 'Z'; stdout: a 'k' per file, then 'Z'. /workspace must be empty.
#   clear:   removes everything under /workspace (a restore that failed half-way).
# In restore, the 'F' record's key field is the file's mtime in seconds (it is set on the file).
use strict;
use Time::HiRes ();

my $ROOT = "/workspace";
my $PIECE = 1 << 20;
my $mode = shift @ARGV // "";
binmode STDIN;
binmode STDOUT;
$| = 0;

sub put_fields { print STDOUT pack("(N/a*)*", @_) or die "write: $!\n" }

sub read_exact {
  my ($n) = @_;
  my $buf = "";
  while (length($buf) < $n) {
    my $got = sysread(STDIN, $buf, $n - length($buf), length($buf));
    die "read: $!\n" unless defined $got;
    die "truncated input\n" if $got == 0;
  }
  return $buf;
}
sub read_field { my $len = unpack("N", read_exact(4)); return $len == 0 ? "" : read_exact($len) }

sub key_of {
  my @st = Time::HiRes::lstat($_[0]);
  return @st ? join("/", $st[7], $st[9], $st[10], $st[1]) : "";
}

sub scan {
  local $/;
  my $in = <STDIN> // "";
  my %known = split /\0/, $in;
  my @stack = ("");
  while (@stack) {
    my $rel = pop @stack;
    my $dir = $rel eq "" ? $ROOT : "$ROOT/$rel";
    opendir(my $dh, $dir) or next;
    my @names = sort grep { $_ ne "." && $_ ne ".." } readdir($dh);
    closedir($dh);
    for my $name (@names) {
      my $path = $rel eq "" ? $name : "$rel/$name";
      my $full = "$ROOT/$path";
      my @st = Time::HiRes::lstat($full) or next;
      my $perm = sprintf("%o", $st[2] & 07777);
      if (-l _) {
        my $target = readlink($full);
        put_fields("l", $path, $target) if defined $target;
      } elsif (-d _) {
        put_fields("d", $perm, $path);
        push @stack, $path;
      } elsif (-f _) {
        my $key = join("/", $st[7], $st[9], $st[10], $st[1]);
        if (defined $known{$path} && $known{$path} eq $key) {
          put_fields("f", $perm, $path, $key);
          next;
        }
        # O_NOFOLLOW (0400000): a file swapped for a symlink since the lstat is not followed.
        sysopen(my $fh, $full, 0400000) or next;
        binmode $fh;
        put_fields("F", $perm, $path, $key);
        while (1) {
          my $got = sysread($fh, my $buf, $PIECE);
          last unless $got;
          print STDOUT pack("N/a*", $buf) or die "write: $!\n";
        }
        print STDOUT pack("N", 0) or die "write: $!\n";
        close($fh);
      }
      # Sockets, FIFOs and devices are not kept.
    }
  }
  put_fields("Z");
}

sub restore {
  my @dirs;
  while (1) {
    my $type = read_field();
    last if $type eq "Z";
    if ($type eq "d") {
      my $perm = read_field();
      my $path = read_field();
      mkdir("$ROOT/$path", 0700) or die "mkdir $path: $!\n";
      push @dirs, [$path, $perm];
    } elsif ($type eq "l") {
      my $path = read_field();
      my $target = read_field();
      symlink($target, "$ROOT/$path") or die "symlink $path: $!\n";
    } elsif ($type eq "F") {
      my $perm = read_field();
      my $path = read_field();
      my $mtime = read_field();
      my $full = "$ROOT/$path";
      # O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW
      sysopen(my $fh, $full, 01 | 0100 | 0200 | 0400000, 0600) or die "create $path: $!\n";
      binmode $fh;
      while (1) {
        my $len = unpack("N", read_exact(4));
        last if $len == 0;
        my $buf = read_exact($len);
        my $off = 0;
        while ($off < $len) {
          my $w = syswrite($fh, $buf, $len - $off, $off);
          die "write $path: $!\n" unless defined $w;
          $off += $w;
        }
      }
      close($fh) or die "close $path: $!\n";
      chmod(oct($perm) & 07777, $full) if $perm =~ /^[0-7]+$/;
      Time::HiRes::utime($mtime, $mtime, $full) if $mtime =~ /^[0-9.]+$/;
      put_fields("k", $path, key_of($full));
    } else {
      die "unknown record type '$type'\n";
    }
  }
  # Directories' modes last, deepest first: a read-only directory takes no files.
  for my $d (reverse @dirs) { chmod(oct($d->[1]) & 07777, "$ROOT/$d->[0]") if $d->[1] =~ /^[0-7]+$/ }
  put_fields("Z");
}

sub clear {
  opendir(my $dh, $ROOT) or die "$ROOT: $!\n";
  my @names = grep { $_ ne "." && $_ ne ".." } readdir($dh);
  closedir($dh);
  system("/bin/rm", "-rf", "--", map { "$ROOT/$_" } @names) == 0 or die "rm failed\n" if @names;
  put_fields("Z");
}

if ($mode eq "scan") { scan() }
elsif ($mode eq "restore") { restore() }
elsif ($mode eq "clear") { clear() }
else { die "usage: workspace-files.pl scan|restore|clear\n" }
close(STDOUT) or die "write: $!\n";
