package tape

import "time"

// ReplayOf starts the replay tape of rec (executor mode's or simulator mode's): its meta
// with replay_of set to rec's tape id and labels (rec's own labels added where labels has
// none of that name), and every thread of rec (same ids and parents) without steps, to be
// filled as they are played.
func ReplayOf(rec *Tape, start time.Time, labels map[string]string) *Tape {
	out := New(rec.Meta.Provider, start)
	m := rec.Meta
	recID := m.TapeID
	out.Meta = Meta{TapeID: out.Meta.TapeID, Harness: m.Harness, HarnessVersion: m.HarnessVersion,
		Provider: m.Provider, Model: m.Model, StartedAt: start.UTC(), Task: m.Task, ReplayOf: &recID, Labels: labels}
	for k, v := range m.Labels {
		if _, ok := out.Meta.Labels[k]; !ok {
			out.Meta.Labels[k] = v
		}
	}
	for _, th := range rec.Threads {
		out.Threads = append(out.Threads, &Thread{ID: th.ID, Parent: th.Parent, Steps: []*Step{}})
	}
	return out
}
