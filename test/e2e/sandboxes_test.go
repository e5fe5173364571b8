package e2e

// The tests open sandboxes of every kind: link every backend.
import _ "github.com/tapebox/tapebox/sandbox/all"
