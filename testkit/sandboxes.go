package testkit

// testkit replays in any kind of sandbox: link every backend.
import _ "github.com/tapebox/tapebox/sandbox/all"
