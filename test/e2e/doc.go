// Package e2e holds end-to-end tests across packages: hand-built tapes of Claude Code and
// Codex runs replayed in executor mode on the local sandbox and in a fresh container. It has
// no code of its own.
package e2e
