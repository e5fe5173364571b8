package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

//go:embed tape.schema.json
var schemaJSON []byte

// URL is the schema's $id.
const URL = "https://github.com/tapebox/tapebox/schema/tape.schema.json"

// Schema returns the schema's bytes (a copy).
func Schema() []byte { return bytes.Clone(schemaJSON) }

type compiled struct {
	// full is the whole schema, for reference. skeleton is the schema with every unit
	// definition replaced by true, for a tape whose unit instances the decoder replaced by
	// placeholders; each unit's schema is its definition within the skeleton.
	full, skeleton *jsonschema.Schema
	shape          *shape
	units          []*unitDef
}

// unitPrefix names the copies of the unit definitions in the skeleton.
const unitPrefix = "tapebox-unit-"

// load compiles the schema once; a failure is a bug in the embedded file, reported by
// every call rather than by a panic at start-up.
var load = sync.OnceValues(func() (*compiled, error) {
	doc, err := parseSchema()
	if err != nil {
		return nil, err
	}
	c := &compiled{}
	if _, c.full, err = compile(doc); err != nil {
		return nil, err
	}
	if c.shape, c.units, err = buildShape(doc, unitDefs); err != nil {
		return nil, fmt.Errorf("tape.schema.json: %w", err)
	}
	skel, err := parseSchema()
	if err != nil {
		return nil, err
	}
	defs := skel.(map[string]any)["$defs"].(map[string]any)
	for _, u := range c.units {
		defs[unitPrefix+u.name] = defs[u.name]
		defs[u.name] = true
	}
	compiler, skeleton, err := compile(skel)
	if err != nil {
		return nil, err
	}
	c.skeleton = skeleton
	for _, u := range c.units {
		if u.schema, err = compiler.Compile(URL + "#/$defs/" + unitPrefix + u.name); err != nil {
			return nil, fmt.Errorf("compile tape.schema.json#/$defs/%s: %w", u.name, err)
		}
	}
	return c, nil
})

func parseSchema() (any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("parse tape.schema.json: %w", err)
	}
	return doc, nil
}

func compile(doc any) (*jsonschema.Compiler, *jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(URL, doc); err != nil {
		return nil, nil, fmt.Errorf("load tape.schema.json: %w", err)
	}
	sch, err := c.Compile(URL)
	if err != nil {
		return nil, nil, fmt.Errorf("compile tape.schema.json: %w", err)
	}
	return c, sch, nil
}

// Problem is one violation of the schema.
type Problem struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value, or of the missing or
	// unknown field: /threads/0/steps/3/response/stop_reason. Empty for the whole document.
	Pointer string `json:"pointer"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// String returns "pointer: message".
func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(document)"
	}
	return ptr + ": " + p.Message
}

// ValidationError lists every violation of the schema in a tape, ordered by pointer.
type ValidationError struct {
	Problems []Problem
	// version is set when the tape's version is not one this build reads.
	version bool
}

// Error returns one "pointer: message" per line.
func (e *ValidationError) Error() string {
	var sb strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(p.String())
	}
	return sb.String()
}

// Unwrap returns tape.ErrUnsupportedVersion when the tape has a version this build does
// not read, so that errors.Is(err, tape.ErrUnsupportedVersion) works as it does for
// tape.Unmarshal.
func (e *ValidationError) Unwrap() error {
	if e.version {
		return tape.ErrUnsupportedVersion
	}
	return nil
}

// Validate checks one tape's bytes against the schema. It returns nil; or a
// *ValidationError listing every violation with its JSON pointer and reason; or a
// *SyntaxError, naming line and column, for bytes that are not one JSON value (a
// truncated file's error matches io.ErrUnexpectedEOF). A tape whose version is not
// tape.Version gets a single problem at /version that matches tape.ErrUnsupportedVersion:
// the rest of such a tape follows a layout this build does not know.
func Validate(data []byte) error {
	c, err := load()
	if err != nil {
		return err
	}
	v, units, err := decode(data, c.shape)
	if errors.Is(err, errDuplicateKey) {
		p, _ := checkUnique(data) // the error path: find the pointer
		return &ValidationError{Problems: []Problem{p}}
	}
	if err != nil {
		return err
	}
	if p, bad := checkVersion(v); bad {
		return &ValidationError{Problems: []Problem{p}, version: true}
	}
	probs, err := validateValue(c.skeleton, v)
	if err != nil {
		return err
	}
	unitProbs, err := validateUnits(data, c.shape, units)
	if err != nil {
		return err
	}
	probs = append(probs, unitProbs...)
	if len(probs) == 0 {
		return nil
	}
	return &ValidationError{Problems: sortProblems(probs)}
}

// checkUnique finds a key repeated in an object (jsonlex.DuplicateKeyError): the decoder,
// like encoding/json, would keep the last copy, and a tape that says one thing to one reader
// and another to the next is not valid.
func checkUnique(data []byte) (Problem, bool) {
	var de *jsonlex.DuplicateKeyError
	if err := jsonlex.CheckUnique(data); errors.As(err, &de) {
		msg := fmt.Sprintf("duplicate object key %q: it repeats an earlier key of the object", de.Key)
		if de.Key != de.First {
			msg = fmt.Sprintf("duplicate object key %q: it differs from the earlier key %q only in case", de.Key, de.First)
		}
		return Problem{Pointer: de.Pointer, Message: msg}, true
	}
	return Problem{}, false
}

// validateValue validates a decoded value and returns its problems.
func validateValue(sch *jsonschema.Schema, v any) ([]Problem, error) {
	err := sch.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("validate tape: %w", err)
	}
	return problems(ve), nil
}

// validateUnits validates each distinct unit instance once and reports its problems at
// every place it occurs.
func validateUnits(data []byte, sh *shape, units []*unitRun) ([]Problem, error) {
	type bad struct {
		key   string
		probs []Problem
	}
	var bads []bad
	for _, u := range units {
		v, err := u.value(data)
		if err != nil {
			return nil, fmt.Errorf("validate tape: %w", err)
		}
		probs, err := validateValue(u.def.schema, v)
		if err != nil {
			return nil, err
		}
		if len(probs) > 0 {
			bads = append(bads, bad{u.key, probs})
		}
	}
	if len(bads) == 0 {
		return nil, nil
	}
	located, err := locateUnits(data, sh)
	if err != nil {
		return nil, fmt.Errorf("validate tape: %w", err)
	}
	var offsets []int
	for _, b := range bads {
		offsets = append(offsets, located[b.key].at...)
	}
	where := pointersAt(data, offsets)
	var out []Problem
	for _, b := range bads {
		for _, at := range located[b.key].at {
			for _, p := range b.probs {
				out = append(out, Problem{Pointer: where[at] + p.Pointer, Message: p.Message})
			}
		}
	}
	return out, nil
}

// checkVersion reports a version other than tape.Version the way tape.Unmarshal does: by
// its text, so 1.0 and "1" are not version 1 either.
func checkVersion(v any) (Problem, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Problem{}, false
	}
	ver, ok := m["version"]
	if !ok {
		return Problem{}, false
	}
	if n, ok := ver.(json.Number); ok && n == json.Number(strconv.Itoa(tape.Version)) {
		return Problem{}, false
	}
	return Problem{
		Pointer: "/version",
		Message: fmt.Sprintf("unsupported tape version %s: this build reads version %d", display(ver), tape.Version),
	}, true
}

// problems flattens the validator's tree of errors into one problem per violation.
func problems(root *jsonschema.ValidationError) []Problem {
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, leaf(e)...)
	}
	walk(root)
	return out
}

// sortProblems orders problems by pointer and drops duplicates.
func sortProblems(probs []Problem) []Problem {
	slices.SortFunc(probs, func(a, b Problem) int {
		if c := comparePointers(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(probs)
}

// leaf turns one violation into problems, naming missing and unknown fields in the
// pointer itself.
func leaf(e *jsonschema.ValidationError) []Problem {
	at := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		out := make([]Problem, 0, len(k.Missing))
		for _, name := range k.Missing {
			out = append(out, Problem{at + "/" + escapeToken(name), "required field is missing"})
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]Problem, 0, len(k.Properties))
		for _, name := range k.Properties {
			out = append(out, Problem{at + "/" + escapeToken(name), "unknown field: version 1 of the tape format has no such field here"})
		}
		return out
	case *kind.Type:
		return []Problem{{at, fmt.Sprintf("wrong type: got %s, want %s", k.Got, strings.Join(k.Want, " or "))}}
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		return []Problem{{at, fmt.Sprintf("got %s, want one of %s", display(k.Got), strings.Join(want, ", "))}}
	case *kind.Const:
		return []Problem{{at, fmt.Sprintf("got %s, want %s", display(k.Got), display(k.Want))}}
	case *kind.Format:
		return []Problem{{at, fmt.Sprintf("%s is not a valid %s: %v", display(k.Got), k.Want, k.Err)}}
	}
	// Other keywords: the validator's own message. Error() prefixes it with the instance
	// location, which is left empty here so that the prefix is constant.
	msg := (&jsonschema.ValidationError{SchemaURL: e.SchemaURL, ErrorKind: e.ErrorKind}).Error()
	msg = strings.TrimPrefix(msg, "at '': ")
	return []Problem{{at, shorten(msg, 300)}}
}

// display shows a JSON value briefly.
func display(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(shorten(v, 60))
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return shorten(fmt.Sprint(v), 60)
}

// shorten cuts s to at most n bytes (on a rune boundary) and marks the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func pointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(escapeToken(t))
	}
	return sb.String()
}

var tokenEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapeToken(t string) string { return tokenEscaper.Replace(t) }

// comparePointers orders pointers token by token, numeric tokens by value, so that
// /threads/0/steps/10 comes after /threads/0/steps/9.
func comparePointers(a, b string) int {
	at, bt := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == bt[i] {
			continue
		}
		an, aerr := strconv.ParseUint(at[i], 10, 64)
		bn, berr := strconv.ParseUint(bt[i], 10, 64)
		if aerr == nil && berr == nil {
			if an < bn {
				return -1
			}
			return 1
		}
		return strings.Compare(at[i], bt[i])
	}
	return len(at) - len(bt)
}
