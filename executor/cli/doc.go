// Package cli is the command line of tapebox-exec, the sandbox-side executor:
//
//	tapebox-exec serve                                  a protocol session on stdin/stdout
//	tapebox-exec call --harness NAME --cwd DIR [--state-dir DIR]
//	                                                    one call request from stdin, its
//	                                                    result line on stdout
//	tapebox-exec version
//
// The call subcommand is a stable contract (the conformance tests use it): it reads one
// {"op":"call",...} line and writes one {"op":"result",...} line, or an {"op":"error",...}
// line and exit status 1 when the request cannot be run.
//
// Exit status: 0 success, 1 failure, 2 usage error.
package cli
