// Package realharness runs the real Claude Code and Codex CLI binaries and the pi coding
// agent, installed from npm under harnesses/ at pinned versions, offline against a model
// provider at a base URL (in tests: package fakeprovider). It sets up what each harness
// needs to run unattended as root with no internet: a throwaway home, a placeholder key,
// Codex's custom provider config and Pi's models.json, and the switches that stop the
// harnesses calling their vendors.
package realharness
