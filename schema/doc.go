// Package schema holds the JSON Schema of the tape format (tape.schema.json, draft 2020-12)
// and validates tapes against it.
//
// Validate checks one tape's bytes and returns a *ValidationError that lists every
// violation with its JSON pointer, or a *SyntaxError for bytes that are not JSON.
// ValidateFiles checks many files on all cores.
//
// Speed: jsonschema/v6 validates decoded Go values (maps, slices, strings, numbers).
// Decoding a tape with encoding/json into such values is slow (about 90 MB/s) and allocates
// a copy of every string. Validate instead decodes with its own decoder, which is guided by
// the schema: a subtree the schema leaves open (request.raw, response.raw, params values,
// tool input schemas) is only checked to be well-formed JSON and never built, and a value
// whose schema constrains nothing but its type (a message's text, a chunk's data) is
// scanned and replaced by an empty value of the same type. The validator gives the same
// verdict and the same problems for the reduced tree as for the full one, because every
// keyword it evaluates sees the value it would have seen; what is skipped is only what the
// schema does not look at.
package schema
