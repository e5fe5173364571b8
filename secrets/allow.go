package secrets

import "slices"

// How a string is scanned, chosen by the name of the JSON member that holds it (for an
// array element, the member that holds the array).
type fieldClass int

const (
	// scanAll applies every rule.
	scanAll fieldClass = iota
	// protocolID holds an identifier the protocol made up: random, often long, and needed
	// as it is by replay and fork. gitleaks' generic rules (a high-entropy value under a
	// key-like name, as in prompt_cache_key: 019a…) are not applied to it; the rules for a
	// known vendor's key format still are, so a real key pasted into such a field is found.
	protocolID
	// opaque is a provider's signature or ciphertext over content that is scanned
	// elsewhere in the tape: it is not scanned at all.
	opaque
)

// fields is the allowlist. Names are matched exactly (JSON member names and lower-case
// header names).
var fields = map[string]fieldClass{
	// Tool-use, message, response and item ids: toolu_…, call_…, msg_…, resp_…, fc_…, rs_….
	"id":                   protocolID,
	"tool_use_id":          protocolID,
	"tool_call_id":         protocolID,
	"call_id":              protocolID,
	"item_id":              protocolID,
	"response_id":          protocolID,
	"previous_response_id": protocolID,
	// A thread's parent: [thread id, tool call id].
	"parent": protocolID,
	// Tape ids (meta.tape_id, meta.replay_of).
	"tape_id":   protocolID,
	"replay_of": protocolID,
	// Provider request ids in response headers.
	"request-id":   protocolID,
	"x-request-id": protocolID,
	// Codex sends its conversation id as the prompt cache key.
	"prompt_cache_key": protocolID,
	// Content digests (meta.workspace).
	"sha256": protocolID,
	"digest": protocolID,

	// Anthropic thinking-block signatures.
	"signature": opaque,
	// OpenAI Responses reasoning items, encrypted by the provider.
	"encrypted_content": opaque,
}

// classOf is fields[field], for the member name of every string scanned, as a switch: the
// compiler's search by length and bytes costs less than a map lookup's hash
// (TestClassOf holds the two together).
func classOf(field string) fieldClass {
	switch field {
	case "id", "tool_use_id", "tool_call_id", "call_id", "item_id", "response_id",
		"previous_response_id", "parent", "tape_id", "replay_of", "request-id", "x-request-id",
		"prompt_cache_key", "sha256", "digest":
		return protocolID
	case "signature", "encrypted_content":
		return opaque
	}
	return scanAll
}

// ProtocolFields returns the member names whose strings are protocol ids, sorted: only the
// rules of known key formats apply to them.
func ProtocolFields() []string { return fieldsOf(protocolID) }

// OpaqueFields returns the member names whose strings are not scanned, sorted.
func OpaqueFields() []string { return fieldsOf(opaque) }

func fieldsOf(c fieldClass) []string {
	var out []string
	for name, fc := range fields {
		if fc == c {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
