// Package local is the sandbox backend for "local:DIR" and "unsafe-local:DIR": the executor
// and the tape's commands run on this machine with DIR as their working directory, under
// bubblewrap where it can. Importing it registers the scheme with package sandbox:
//
//	import _ "github.com/tapebox/tapebox/sandbox/local"
//
//	sb, err := sandbox.Open(ctx, "local:"+dir, sandbox.Options{})
//
// local:DIR runs each command (the executor's session, Exec, StartCommand) under bwrap
// (Debian package bubblewrap), as the current user inside a user namespace with no
// capabilities:
//
//   - Filesystem: DIR, bound at its own path, is the only host directory it can write.
//     /usr, /bin, /sbin, /lib*, /etc and /opt are read-only; nothing else of the host is
//     there: not the home directories or /root, not /var, /run (the Docker socket), /srv,
//     /mnt, /media or the host's /tmp. DIR's parent directories are read-only, so "../x"
//     fails. /tmp is the sandbox's own, a private host directory kept across executor
//     restarts (the executor's state directory, with its background tasks, is there) and
//     removed by Close; HOME is /tmp/tapebox-home in it. /dev holds only null, zero, full,
//     random, urandom, tty, shm and pts; /proc is the sandbox's. Run as root, root still
//     owns root's files: /etc's entries that other users cannot read are covered with
//     empty ones.
//   - Network: none but its own loopback (a new network namespace per command).
//   - Processes: one pid namespace for the sandbox's life, held by a keeper process, so
//     background tasks outlive an executor restart; host processes are not visible. Nested
//     user namespaces are refused (bwrap 0.8 and later). Close, or the death of the TapeBox
//     process, ends them all.
//   - Environment: PATH (the host's entries that the sandbox sees), HOME, SHELL, USER,
//     LOGNAME, LANG, LANGUAGE, LC_*, TERM and TZ, then Options.Env; nothing else of the
//     host's.
//
// Close clears the setuid and setgid bits of DIR's files, in execute-only directories too. A
// replay killed before Close leaves them, and its private directory (marked with its owner,
// as the Docker backend labels containers); the next Open of the same user clears and
// removes what a replay that is gone left.
//
// It does not limit CPU, memory or the number of processes, and does not filter system
// calls. Where bwrap is missing or cannot make a sandbox (no unprivileged user namespaces,
// not Linux), local:DIR runs as unsafe-local:DIR does, and says why in one "warning:" line
// through Options.Logf (the standard error when Logf is nil). A bwrap that is only slow is
// no such machine: when its sandbox is not ready within a minute, or Open's context ends
// first, Open fails. unsafe-local:DIR also passes only the variables above (with the host's
// HOME and TMPDIR), but a command there can read everything the user can, the environment
// of the user's other processes included.
package local
