package cli

// The command line opens every kind of sandbox: link every backend.
import _ "github.com/tapebox/tapebox/sandbox/all"
