// Package gateway records an agent's model calls: Gateway is a reverse proxy between the
// agent and its provider that speaks Anthropic Messages, OpenAI Chat Completions and OpenAI
// Responses, streaming and not, and writes every call into one tape.
//
// Streams are forwarded chunk by chunk as they arrive (never buffered) and recorded event by
// event with their time. Each call is attributed to a thread: a request that answers the
// tool calls of a thread's last step continues it; a request that starts a new conversation
// while a spawning tool call (Claude Code's Agent/Task, Codex's spawn_agent) waits for its
// child becomes that child's thread. A step's tool results are taken from its thread's next
// request. The tape is persisted after every call with tape.Writer, so a gateway killed at
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
// Config.Cwd gives it, the working directory the harness names in its request.
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
// would then answer a call the gateway neither records nor counts against its limits.
//
// JSON bodies are recorded as sent, not redacted by field name: the wire formats recorded
// carry no credential field (the providers reject unknown top-level fields such as api_key),
// while many protocol fields have a credential word in their names (a thinking block's
// signature, prompt_cache_key, max_tokens, a tool's session_id), and replay and fork need
// them and the tool-use ids byte for byte. A secret in a body sits in content (a prompt, a
// tool result, a file), where no name says so: finding it takes a rule set over the values,
// which `tapebox scan` and the dataset export gate apply to the finished tape.
//
// Simulator serves a tape instead of a live upstream (simulator mode): the recorded
// responses on the providers' own paths, to a real harness, each request checked against
// the recording (a divergence gets an error in the provider's shape), learned identifiers
// substituted in the streams, and each run's replay tape recorded.
//
// The gateway has no authentication of its own: what may reach it may send calls through
// it. It is meant to listen on loopback; POST /tapebox/end answers loopback peers, or a
// request with Config.EndToken.
package gateway
