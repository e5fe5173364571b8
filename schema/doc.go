// Package schema holds the JSON Schema of the tape format (tape.schema.json, draft 2020-12,
// embedded) and validates tapes against it with github.com/santhosh-tekuri/jsonschema/v6.
//
// Validate checks one tape's bytes and returns a *ValidationError that lists every
// violation with its JSON pointer, or a *SyntaxError (line and column) for bytes that are
// not JSON. ValidateFiles checks many files on every core.
//
// # Speed
//
// jsonschema/v6 validates decoded Go values (maps, slices, strings, numbers). Decoding a
// tape with encoding/json into such values runs at 90 to 200 MB/s and copies every
// string, and the validator then spends about a microsecond on every object. Validate
// reaches several times that (see BenchmarkValidate) with two ideas, both exact: the
// validator sees the same values at every place it evaluates a keyword, and reports the
// same problems at the same pointers as it would for the tape decoded in full (tests and
// FuzzValidate compare the two).
//
// The decoder is guided by the schema. A subtree the schema leaves open (request.raw,
// response.raw, params values, input schemas) is only checked to be well-formed JSON; a
// value whose schema constrains nothing but its type (a message's text, a chunk's data)
// is scanned and replaced by an empty value of that type; strings are scanned eight bytes
// at a time.
//
// Some definitions (message, block, tool, tool call, tool result, chunk) are validated as
// units: once per distinct instance rather than once per occurrence. A tape repeats
// itself (every request carries the whole conversation so far), and once the decoder has
// dropped what the schema does not look at, most blocks look alike. The decoder writes a
// reduced encoding of each instance, which holds exactly what the validator would see;
// instances with equal encodings have the same problems, relative to where they stand, so
// only the first of each is built and validated. When one is invalid, a second pass finds
// every place where it occurs.
package schema
