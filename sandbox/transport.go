package sandbox

import "fmt"

// Transport says how the executor session of a Docker sandbox travels between the host and
// "tapebox-exec serve".
type Transport string

// The transports. A local sandbox always uses pipes to a host process.
const (
	// TransportAuto (also the zero value) uses a unix socket when TapeBox creates the
	// container (docker-image:) on an engine of this machine with the default runtime, and
	// the exec stream otherwise. When the socket cannot be set up (the engine refuses the
	// bind mount, the executor is too old for serve --dial, the socket cannot be reached
	// through the mount), it says why through Options.Logf and uses the exec stream.
	TransportAuto Transport = "auto"
	// TransportStream always uses the exec session's hijacked stdin/stdout stream through
	// the engine: about 0.1 ms a round trip on engine 20.10.
	TransportStream Transport = "stream"
	// TransportSocket insists on the unix socket: Open and Start fail, saying why, where
	// TransportAuto would fall back to the stream. The controller listens on a socket in a
	// host directory mounted read-only into the container and the executor connects to it,
	// so calls bypass the engine (about 0.03 ms a round trip); the exec session stays, as the
	// executor's lifeline and for its stderr.
	TransportSocket Transport = "socket"
)

// ParseTransport parses "auto", "stream" or "socket" ("" is auto).
func ParseTransport(s string) (Transport, error) {
	t := Transport(s)
	switch t {
	case "", TransportAuto:
		return TransportAuto, nil
	case TransportStream, TransportSocket:
		return t, nil
	}
	return "", fmt.Errorf("%w: unknown executor transport %q: use auto, stream or socket", ErrOption, s)
}

// check fails a transport that spec's sandbox cannot use.
func (t Transport) check(spec Spec) error {
	t, err := ParseTransport(string(t))
	if err != nil {
		return err
	}
	if t == TransportSocket && spec.Scheme != SchemeDockerImage {
		return fmt.Errorf("%w: the socket transport needs a container TapeBox creates (docker-image:IMAGE), where it can bind-mount the socket's directory; %s sandboxes use %s",
			ErrOption, spec.Scheme, map[string]string{SchemeLocal: "pipes", SchemeDocker: "the exec stream"}[spec.Scheme])
	}
	return nil
}
