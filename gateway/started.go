package gateway

import "time"

// StartedAt returns the tape's start time (meta.started_at): the zero of its clock, which
// telemetry samples line up with.
func (g *Gateway) StartedAt() time.Time { return g.start }
