// Package tape defines the TapeBox tape format, version 1: one JSON object per agent run,
// holding every model call of every conversation (thread) with its request, response,
// tool calls, tool results and timing.
//
// Layout (the contract; schema/tape.schema.json describes the same thing):
//
//	tape
//	  version        1
//	  meta           tape_id, harness, harness_version, provider, model, cwd (omitted when
//	                 unknown), started_at, task{}, replay_of, labels{},
//	                 workspace{} (omitted when not taken),
//	                 limits{max_cost_usd, max_steps, max_thread_steps, max_tokens, max_repeat}
//	                 (a recorder's breaker; omitted when none),
//	                 forked_from{tape_id, thread, step, served{}, overrides{}} (a fork
//	                 tape only: the steps served from its recording and the overrides),
//	                 ended{reason, at, detail, limit} (null while running)
//	  threads[]      one per conversation: the main agent, then each subagent
//	    id, parent   parent = [thread id, tool call id] that spawned it, null for the main thread
//	    steps[]      one per model call, in the order answered; a step whose next step
//	                 asks for the same turn again was retried (Thread.Superseded)
//	      request    path, system, messages[], tools[], params{}, stream, headers{}, raw
//	      response   status, headers{}, content[] (text | thinking | tool_use), stop_reason,
//	                 usage{}, raw, chunks[] (at_ms, data)
//	      tool_calls[]    id, name, input{}, kind        parsed from the response
//	      tool_results[]  tool_call_id, content[], is_error, duration_ms
//	                                                     taken from the thread's next request
//	      timing     request_at, first_byte_at, last_byte_at, next_request_at
//	                 (ms since meta.started_at)
//	      served_from_tape  true on a fork tape's steps answered from the recording
//	                        (omitted otherwise)
//	      digest     the step's link in its thread's chain (omitted without digests)
//	  digest         algorithm, meta, root, public_key, signature (omitted without digests)
//
// Normalized fields (system, messages, tools, params, content, stop_reason, usage,
// tool_calls, tool_results) are always derived from the raw bodies by package
// tape/provider, so a tape can be re-normalized from raw. A body a recorder did not keep,
// being over its limit, is a Truncation marker in raw, with empty normalized fields.
//
// One codec: the field table (codec.go) lists each object of the format with its members
// in order, when each is left out, and how its value is written and read. It is the only
// place that spells out the layout; everything that reads or writes the format takes
// keys, order and omission from it:
//
//   - Marshal gives the canonical encoding (the same tape gives the same bytes; Load then
//     Marshal reproduces a canonical file), and MarshalStep, AppendToolResult and
//     AppendToolCall pieces of it. Save writes atomically.
//   - Writer persists a tape that grows one model call at a time at a cost that does not
//     grow with the tape, from pieces of the same encoding; its doc explains how.
//   - Unmarshal, Load and LoadFile read with the table's decoder, strictly: a key repeated
//     in any object (raw bodies included) and a field the table does not know are errors
//     naming the JSON pointer and line. Input it finds unusual (a null where the format
//     has a string, invalid UTF-8) goes to encoding/json, which decides as before.
//   - Decode also returns the canonical encoding (the input itself when it is canonical,
//     without a copy), for readers that store it, as package dataset does; IsCanonical
//     checks bytes against a tape a step at a time.
//   - LoadSummary and Summarize read a tape without its bodies, following the table to
//     them.
//   - Digest explains the digests (sha256-jcs-chain-2), Seal and the Writer compute them,
//     Verify checks them; the SHA-256 and ed25519 they use come from package tape/seal, so
//     that this package links no cryptography.
//
// The tables are filled on first use, not at init: the sandbox-side executor links this
// package for AppendToolResult, and links only the tables it encodes.
package tape
