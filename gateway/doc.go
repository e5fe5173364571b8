// Package gateway is TapeBox's one model endpoint: an http.Handler a harness points its
// provider base URL at, speaking Anthropic Messages, OpenAI Chat Completions, OpenAI
// Responses and the Gemini API, streaming and not. Its upstream is one of three (Mode, after
// go-vcr's recorder modes):
//
//   - live (ModeLive, Gateway): a reverse proxy to the provider that records every call into
//     one tape (tapebox record, tapebox gateway);
//   - a tape (ModeTape, Simulator): the recorded responses, each request checked against the
//     recording, each run's replay tape recorded (simulator mode, tapebox replay --listen);
//   - a tape until step N, live after it (ModeFork, Fork): tapebox fork.
//
// Every mode has the same parts: one router (route: which wire a request is, by its path as
// sent), one table of wire formats (wires), one thread matcher (matcher: live threads
// matched by their key, a tape's threads by similarity), one step recorder (recorder: a
// tape.Writer on disk, or the tape in memory), and one writer of the errors it answers
// itself in the provider's shape (writeError). Adding a provider is an entry in wires (its
// default upstream, its streams' final event, which deltas belong together, and modelPath
// when its paths name the model) once package tape/provider parses and emits its format
// (Path, Normalize, Body, Stream, StepAnswer, ErrorBody); every mode then routes, records,
// serves and refuses it alike.
//
// In live mode, streams are forwarded chunk by chunk as they arrive (never buffered) and recorded event by
// event with their time. Each call is attributed to a thread: a request that answers the
// tool calls of a thread's last step continues it; a request that starts a new conversation
// while a spawning tool call (Claude Code's Agent/Task, Codex's spawn_agent) waits for its
// child becomes that child's thread: the call whose prompt its opening carries, else the
// oldest waiting one when the request offers tools (one that offers none is a side
// question, a title, and takes no call). A step's tool results are taken from its thread's
// next request. A request that asks again for a turn its thread already asked for is a
// retry of that step, by the harness or its SDK, and continues the thread as its next step:
// after a failed call (429, 5xx, a broken stream), and also after a call the gateway
// answered whole when the answer was lost on its way (a client-side timeout, a dropped
// connection; Pi 0.67.1 did this once). The thread goes on from the retry's answer; the
// earlier attempt stays in the tape, superseded (tape.Thread.Superseded), its tool calls
// never run. Only a first request sent again while a pending spawning call's prompt is in
// its opening starts a thread of its own: two subagents given the same task open alike.
// The tape is persisted after every call with tape.Writer, so a gateway killed at
// any moment leaves a valid tape with every finished call.
//
// Every body is forwarded as it arrives, request or answer, chunked or not. A body longer
// than Config.MaxRecordBody (32 MiB unless set; --max-record-body) is still forwarded whole
// but recorded as a tape.Truncation marker in its raw field: a prefix of a JSON body is not
// JSON, and a prefix of a stream would look like a whole answer. On its way to the limit,
// what is kept of a body past 4 MiB waits in a spill file beside the tape (unlinked at
// once), so that the gateway's memory does not follow the size of what it forwards: a
// request kept in a spill file is read back to attribute the call and again to record it,
// one such request at a time.
//
// The first call fills the meta: provider, model, harness (from the headers) and, unless
// Config.Cwd gives it, the working directory the harness names in its request; the first
// request that offers tools, the agent's, sets the model (and a cwd not yet known) again,
// since a side request without tools may come first with another model (OpenCode's title
// request, Gemini CLI's router). With
// Config.Workspace, New snapshots the agent's working directory and Finish records its end
// manifest (meta.workspace).
//
// Config.Limits is a circuit breaker (breaker.go): steps, steps per thread, tokens, cost
// (priced by Config.Cost) and repeated identical tool calls. Once a limit is reached, every
// later model call is refused with an error in the provider's shape and the tape ends with
// reason budget (Tripped says which limit); GET /tapebox/status gives the counters as they
// are (Status).
//
// Credentials are kept out of the tape by name: a request or answer header whose name
// contains key, token, secret, auth, session, cookie, signature, password, passwd or
// credential is recorded as "[redacted]", except the few harmless names tape.RedactHeaders
// lists (with why), and an injected header is redacted whatever its name. The same names
// (and sig, pwd) mark query parameters, whose values are redacted in request.path, in
// URL-valued headers (location, content-location, referer), in a form body and in the
// errors a call records. The upstream and the client still get every header and query as
// sent. With Injection the gateway holds the real key and the agent a placeholder, and the
// key is sent on the model calls it records only. A model call is a POST whose path, as sent
// and still escaped (after a /r/LABEL prefix), is exactly /v1/messages, /v1/chat/completions
// or /v1/responses; that same path is forwarded. A POST whose path only reads as one once
// decoded or normalized (%2F, dot segments, ";" parameters, a trailing slash, another
// prefix) is refused with 400: some server on the way might route it to the model, which
// would then answer a call the gateway neither records nor counts against its limits. The
// tape mode and a fork route with the same rule (one router, route), the /r/LABEL prefix
// naming the run in tape mode.
//
// JSON bodies are recorded as sent, not redacted by field name: the wire formats recorded
// carry no credential field (the providers reject unknown top-level fields such as api_key),
// while many protocol fields have a credential word in their names (a thinking block's
// signature, prompt_cache_key, max_tokens, a tool's session_id), and replay and fork need
// them and the tool-use ids byte for byte. A secret in a body sits in content (a prompt, a
// tool result, a file), where no name says so: finding it takes a rule set over the values,
// which `tapebox scan` and the dataset export gate apply to the finished tape.
//
// In tape mode, each run (/r/RUN/, or "default") has its own cursor, identifiers and
// replay tape; each turn is answered with the recorded step the thread went on from (a
// superseded attempt is never served), and a harness that asks for a turn again gets the
// same answer again; a request that does not match the recording gets an error in the provider's
// shape and ends its run as diverged; learned identifiers are substituted in what is
// served; a step recorded without its raw response is written by tape/provider's emitters.
//
// Fork mode is the tape mode, then the live mode: a Simulator run until the fork point, a
// Gateway from it on, each with its own matcher and recorder, instances of the one type
// each. The two matchers are two because the sides match differently (the tape run finds
// a request's recorded thread by similarity and learns identifiers; the live side by the
// conversation's key), not two implementations. Before the fork point the tape run records
// the steps it serves in memory; at the fork point (the first request past the served
// prefix, once the steps still being served are recorded) Seed appends them through the
// live recorder into the fork tape, marked served_from_tape with their timings moved onto
// its clock, and hands the live matcher their threads as history (last step, turns, and
// the spawning calls whose child has not started), so that a live request answering a
// served step's tool calls continues its thread. That hand-over is the only thing that crosses the fork point.
// It means the fork tape on disk holds no step before the fork point: Finish writes the
// served steps when the harness stops short of it, but a process killed there leaves a fork
// tape without them.
//
// The gateway has no authentication of its own: what may reach it may send calls through
// it. It is meant to listen on loopback; POST /tapebox/end answers loopback peers, or a
// request with Config.EndToken.
package gateway
