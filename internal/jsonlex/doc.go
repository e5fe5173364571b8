// Package jsonlex is the one JSON scanner the hand-written readers share: whitespace,
// strings and their escapes, numbers, literals, skipping and compacting a value, and the
// line and column of an offset. It validates as encoding/json does and allocates only to
// report an error; SkipTrusted and StringTrusted skip without validating, for bytes a
// schema check has passed.
//
// It has no grammar of its own beyond JSON's: each reader (the provider readers, the executor
// protocol codec, the schema decoder, the dataset decoder, the viewer's scanner, the tape
// compactor and tape's streaming scanners behind StripBodies and Verify) keeps its own
// and its own error policy on top of these functions. They work on a byte slice and an
// offset and return the offset past what they read, so a reader keeps its state in two
// integers and its own struct.
//
// Unmarshal decodes into Go values by encoding/json's rules (reflection, struct tags, the
// same values and type errors), for the executor, which must not link encoding/json: its
// decoder and encoder are a tenth of the binary's size budget.
//
// On the writing side it has AppendString and AppendFloat (encoding/json's exact forms),
// AppendValue (encoding/json's bytes for a tree of maps, slices and scalars, compact or
// indented, so that the executor links no reflective encoder) and Marshal, json.Marshal
// without HTML escaping, the form the providers, JavaScript's
// JSON.stringify and the tape's canonical encoding write.
//
// It uses the standard library only, so that tape and the executor may import it.
package jsonlex
