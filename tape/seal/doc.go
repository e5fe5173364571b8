// Package seal gives tapes their digests with SHA-256 and signs them with ed25519: the
// cryptography package tape leaves out so that the sandbox-side executor, which imports
// tape, stays small. Writer is the option a recorder passes to tape.Create, Tape seals a
// tape in memory, and Verify checks a tape file.
package seal
