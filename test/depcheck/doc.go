// Package depcheck holds the test that enforces the dependency direction of docs/design.md. It
// has no code of its own.
package depcheck
