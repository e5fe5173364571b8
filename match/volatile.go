package match

import (
	"regexp"
	"strings"

	"github.com/tapebox/tapebox/tape/harnesses"
)

// Volatile is a part of a tool result that a harness makes different on every run (a wall
// time, a chunk id). Compare and identifier learning mask it before they look at a result.
type Volatile struct {
	Harness string // "" for every harness
	Name    string // what the field is, for reports
	re      *regexp.Regexp
	repl    string
}

// VolatileFields lists the volatile fields TapeBox knows, per harness (from the harness
// table, package tape/harnesses). Compare names them in its report.
var VolatileFields = fromTable(func(h *harnesses.Harness) []harnesses.Volatile { return h.Volatile },
	func(harness string, v harnesses.Volatile) Volatile {
		return Volatile{Harness: harness, Name: v.Name, re: regexp.MustCompile(v.Expr), repl: v.Replace}
	})

// fromTable makes a T of each of the fields of every harness of the harness table.
func fromTable[F, T any](fields func(*harnesses.Harness) []F, make func(harness string, f F) T) []T {
	var out []T
	for _, h := range harnesses.All {
		for _, f := range fields(h) {
			out = append(out, make(h.Name, f))
		}
	}
	return out
}

// appliesTo says whether v is a field of harness ("" for any harness).
func (v Volatile) appliesTo(harness string) bool {
	return v.Harness == "" || v.Harness == harness || harness == ""
}

// Mask replaces the volatile fields of harness in s with placeholders.
func Mask(harness, s string) string {
	for _, v := range VolatileFields {
		if v.appliesTo(harness) {
			s = v.re.ReplaceAllString(s, v.repl)
		}
	}
	return s
}

// VolatileNames lists the volatile fields that apply to harness, for reports.
func VolatileNames(harness string) []string {
	out := []string{}
	for _, v := range VolatileFields {
		if v.appliesTo(harness) {
			out = append(out, v.Harness+": "+v.Name)
		}
	}
	return out
}

// IdentifierField is a place where a harness puts an identifier it makes up on every run (a
// background shell id, a session id, an agent id). A value standing there is learned as an
// identifier without further evidence; any other value needs the recording to use it again
// (see Identifiers).
type IdentifierField struct {
	Harness string
	Name    string
	// re finds the field in a tool result's text; its first group is the identifier.
	re *regexp.Regexp
	// Keys are the JSON fields of tool call inputs that carry the identifier back, where a
	// number is replaced (ApplyJSON); strings are replaced wherever an id token stands.
	Keys []string
}

// IdentifierFields lists the identifier fields TapeBox knows, per harness (from the
// harness table, package tape/harnesses).
var IdentifierFields = fromTable(func(h *harnesses.Harness) []harnesses.Identifier { return h.Identifiers },
	func(harness string, id harnesses.Identifier) IdentifierField {
		return IdentifierField{Harness: harness, Name: id.Name, re: regexp.MustCompile(id.Expr), Keys: id.Keys}
	})

// Value returns the first identifier standing in f in s.
func (f IdentifierField) Value(s string) (string, bool) {
	m := f.re.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// MaskIdentifiers replaces each identifier standing in an identifier field of harness in s
// with "<" + the field's name + ">", as Mask does for the volatile fields. It is for
// comparing two runs that made up their identifiers each on its own (the executor's
// conformance with the real harness), where a replay would learn the pairs instead.
func MaskIdentifiers(harness, s string) string {
	for _, f := range IdentifierFields {
		if f.Harness != harness && harness != "" {
			continue
		}
		ms := f.re.FindAllStringSubmatchIndex(s, -1)
		if ms == nil {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range ms {
			if m[2] < 0 {
				continue
			}
			b.WriteString(s[last:m[2]])
			b.WriteString("<" + f.Name + ">")
			last = m[3]
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}
