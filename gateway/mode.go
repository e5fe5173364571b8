package gateway

// Mode says where the model endpoint's answers come from. The models are go-vcr's recorder
// modes: record only, replay only, and replay with new episodes. Every mode routes the
// providers' paths the same way (wires), attributes each call to a thread with one matcher,
// records its steps with one recorder and answers its own errors in the provider's shape
// with one writer.
type Mode int

const (
	// ModeLive forwards every model call to the upstream and records it into one tape
	// (go-vcr's record only): a Gateway, made by New; tapebox record and tapebox gateway.
	ModeLive Mode = iota
	// ModeTape answers every model call from a recording, checking each request against
	// it, and records each run's replay tape (replay only; simulator mode): a Simulator,
	// made by NewSimulator; tapebox replay --listen.
	ModeTape
	// ModeFork answers from a recording until a fork point and from the upstream from it
	// on, both recorded into one tape (replay with new episodes): a Fork, made by NewFork;
	// tapebox fork.
	ModeFork
)

// String is the mode's name, as a tape's meta.labels "mode" gives it: record, simulator,
// fork.
func (m Mode) String() string {
	switch m {
	case ModeLive:
		return "record"
	case ModeTape:
		return "simulator"
	case ModeFork:
		return "fork"
	}
	return "unknown"
}

// Mode returns ModeLive.
func (g *Gateway) Mode() Mode { return ModeLive }

// Mode returns ModeTape.
func (s *Simulator) Mode() Mode { return ModeTape }

// Mode returns ModeFork.
func (s *Fork) Mode() Mode { return ModeFork }
