// Package all links every sandbox backend into the program that imports it: local:,
// unsafe-local:, docker:, docker-image: and k8s: specs then open with sandbox.Open. The
// command line and testkit import it; a library that needs one kind imports only that
// backend's package, and does not link the others' clients.
//
//	import _ "github.com/tapebox/tapebox/sandbox/all"
package all

import (
	// The backends register their schemes with package sandbox in their init functions.
	_ "github.com/tapebox/tapebox/sandbox/docker"
	_ "github.com/tapebox/tapebox/sandbox/k8s"
	_ "github.com/tapebox/tapebox/sandbox/local"
)
