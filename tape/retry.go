package tape

// A thread's steps are attempts at its turns. A harness, or its SDK, that sends a request
// again (after an error status, a broken stream, a client-side timeout or a dropped
// connection) asks for the same turn again: the retry is the thread's next step, and its
// request holds as many answers of the model as the attempt before it. The thread goes on
// from the last attempt at each turn; the earlier ones are superseded. A superseded step
// keeps what the provider answered (a 429, or a complete answer with tool calls), but the
// harness never went on from it: its tool calls were never run, and it has no tool results
// (the next request carries none for them). Replays run no call of a superseded step,
// simulator mode serves a turn's last attempt, and compare sets superseded steps aside.
//
// This is read from the requests, not written as a field: a tape recorded before the rule
// was stated (a failed attempt and its retry) reads the same way, and a tape cannot say a
// step was superseded when its requests say otherwise.

// Turns counts the model's answers the request's conversation holds: runs of consecutive
// assistant messages, since one answer may come back as several entries (a Responses
// answer's reasoning, message and function_call items each become a message). A request's
// turns are the turn it asks for: 0 for a conversation's first call.
func (r *Request) Turns() int {
	n, inRun := 0, false
	for _, m := range r.Messages {
		out := m.Role == "assistant"
		if out && !inRun {
			n++
		}
		inRun = out
	}
	return n
}

// turnOf is the turn step s asks for, or -1 when its request tells nothing: a body the
// recorder did not keep (a Truncation marker, normalized to no messages), or no messages
// at all (a tape written by hand, or without its normalized fields).
func turnOf(s *Step) int {
	if len(s.Request.Messages) == 0 {
		return -1
	}
	return s.Request.Turns()
}

// Superseded says whether step i of th was retried: the thread's next step asks for the
// same turn again, so the harness went on from that retry (or a later one), not from step
// i. False for the last step, for an index out of range, and when either request tells
// nothing of its turn (see turnOf).
func (th *Thread) Superseded(i int) bool {
	if i < 0 || i+1 >= len(th.Steps) {
		return false
	}
	a := turnOf(th.Steps[i])
	return a >= 0 && a == turnOf(th.Steps[i+1])
}

// Kept returns the indexes of th's steps that were not superseded, in order: the step the
// harness went on from at each of its turns (the n-th is turn n's in a recording of the
// gateway), and the thread's last step.
func (th *Thread) Kept() []int {
	out := make([]int, 0, len(th.Steps))
	for i := range th.Steps {
		if !th.Superseded(i) {
			out = append(out, i)
		}
	}
	return out
}
