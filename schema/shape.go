package schema

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// mode says how much of a JSON value the decoder must build for the validator.
type mode uint8

const (
	// modeFull builds the value; its children follow their own shapes.
	modeFull mode = iota
	// modeOpen: the schema accepts any JSON value here; check syntax, build nothing.
	modeOpen
	// modeTypeOnly: the schema constrains only the JSON type here; build an empty value of
	// the same type (numbers, booleans and null are built as they are).
	modeTypeOnly
	// modeEnum: a string enum; strings too long to match any member are cut short.
	modeEnum
	// modeUnit: a value validated on its own against a definition of the schema (see
	// unitDef); the main tree gets a placeholder.
	modeUnit
)

// shape tells the decoder, for one place in a tape, what the schema needs to see there.
// A nil *shape means "unknown": decode the value in full, children included.
type shape struct {
	mode mode
	// props lists an object's properties and their shapes (modeFull). A slice: objects
	// have few properties, and a scan of short names beats hashing them.
	props []prop
	// other is the shape of properties not in props; nil means build in full.
	other *shape
	// items is the shape of an array's items; nil means build in full.
	items *shape
	// maxEnum is the length in bytes of the longest member of a string enum (modeEnum).
	maxEnum int
	// unit is the definition a modeUnit value is validated against.
	unit *unitDef
	// unitItems is set on an array whose items are unit instances and whose schema does
	// not look at its length (only type and items): the decoder records the items and
	// builds an empty array.
	unitItems bool
}

// unitDef is a definition of the schema whose instances are validated apart from the
// rest of the tape, once per distinct instance. A tape repeats itself: every request
// carries the whole conversation so far, so the messages of step n are those of step n-1
// plus two; and once the decoder has dropped what the schema does not look at, most
// blocks, chunks and tool calls look alike ({"type":"text","text":""}). Validating each
// distinct instance once makes validation cost follow the variety of a tape rather than
// its size. This is exact because these definitions use no keyword whose result depends on
// where the instance sits ($dynamicRef, unevaluated*): an instance has the same problems,
// relative to its own place, wherever it occurs. Inside a unit instance, nested unit
// instances are placeholders, validated as units of their own.
type unitDef struct {
	name   string
	shape  *shape             // how to decode an instance
	schema *jsonschema.Schema // the definition, with unit references accepting anything
}

// unitDefs names the definitions validated as units. Each must get a shape (use only
// keywords the decoder understands), and no part of the schema that the decoder does not
// understand may refer to one; load checks both.
var unitDefs = []string{"message", "block", "tool", "toolCall", "toolResult", "chunk"}

type prop struct {
	name  string // the canonical key, so decoded maps share one string per name
	shape *shape
}

var openShape = &shape{mode: modeOpen}

// Keywords that do not affect validation.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$comment": true,
	"title": true, "description": true, "examples": true, "default": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// Keywords whose evaluation buildShape understands: a schema that uses only these (and
// annotations) gets a shape; any other keyword (anyOf, patternProperties, unevaluated...)
// makes its subtree decode in full, which is always correct.
var understood = map[string]bool{
	"type": true, "properties": true, "additionalProperties": true, "items": true,
	"required": true, "minItems": true, "maxItems": true, "const": true,
	"minimum": true, "maximum": true, "format": true, "enum": true,
	"minLength": true, "maxLength": true,
}

// shapeBuilder derives shapes from a schema document (decoded with json.Number numbers).
type shapeBuilder struct {
	defs  map[string]any
	done  map[string]*shape
	units map[string]*shape // modeUnit shapes by definition name
	err   error
}

// buildShape returns the shape of doc's root and the unit definitions named in units,
// whose schemas the caller compiles.
func buildShape(doc any, units []string) (*shape, []*unitDef, error) {
	b := &shapeBuilder{done: map[string]*shape{}, units: map[string]*shape{}}
	if m, ok := doc.(map[string]any); ok {
		b.defs, _ = m["$defs"].(map[string]any)
	}
	for _, name := range units {
		if _, ok := b.defs[name]; !ok {
			return nil, nil, fmt.Errorf("unit definition %q is not in $defs", name)
		}
		b.units[name] = &shape{mode: modeUnit, unit: &unitDef{name: name}}
	}
	root := b.build(doc)
	defs := make([]*unitDef, 0, len(units))
	for _, name := range units {
		u := b.units[name].unit
		if u.shape = b.build(b.defs[name]); u.shape == nil {
			return nil, nil, fmt.Errorf("unit definition %q uses keywords the decoder does not understand", name)
		}
		defs = append(defs, u)
	}
	if b.err != nil {
		return nil, nil, b.err
	}
	return root, defs, nil
}

// build returns the shape of schema s, or nil when the decoder must build the value in
// full. The validator then sees unit instances inside such a value as they are, which is
// only right if no unit definition is referred to from there.
func (b *shapeBuilder) build(s any) *shape {
	sh := b.shapeOf(s)
	if sh == nil && b.err == nil {
		if name, ok := b.mentionsUnit(s, map[string]bool{}); ok {
			b.err = fmt.Errorf("unit definition %q is referred to from a part of the schema the decoder does not understand", name)
		}
	}
	return sh
}

// mentionsUnit reports whether s refers to a unit definition, directly or through other
// definitions.
func (b *shapeBuilder) mentionsUnit(s any, visited map[string]bool) (string, bool) {
	switch s := s.(type) {
	case map[string]any:
		for k, v := range s {
			if ref, ok := v.(string); ok && k == "$ref" {
				name := strings.TrimPrefix(ref, "#/$defs/")
				if _, ok := b.units[name]; ok {
					return name, true
				}
				if def, ok := b.defs[name]; ok && !visited[name] {
					visited[name] = true
					if n, ok := b.mentionsUnit(def, visited); ok {
						return n, true
					}
				}
				continue
			}
			if n, ok := b.mentionsUnit(v, visited); ok {
				return n, true
			}
		}
	case []any:
		for _, v := range s {
			if n, ok := b.mentionsUnit(v, visited); ok {
				return n, true
			}
		}
	}
	return "", false
}

func (b *shapeBuilder) shapeOf(s any) *shape {
	switch s := s.(type) {
	case bool:
		if s {
			return openShape
		}
		return nil // false: every value fails; the validator needs nothing more
	case map[string]any:
		if ref, ok := s["$ref"].(string); ok {
			for k := range s {
				if k != "$ref" && !annotations[k] {
					return nil
				}
			}
			return b.ref(ref)
		}
		keywords := make([]string, 0, len(s))
		for k := range s {
			if annotations[k] {
				continue
			}
			if !understood[k] {
				return nil
			}
			keywords = append(keywords, k)
		}
		switch {
		case len(keywords) == 0:
			return openShape
		case len(keywords) == 1 && keywords[0] == "type":
			return &shape{mode: modeTypeOnly}
		}
		if sh := b.enum(s, keywords); sh != nil {
			return sh
		}
		sh := &shape{mode: modeFull, other: openShape, items: openShape}
		if props, ok := s["properties"].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(props)) {
				sh.props = append(sh.props, prop{name: name, shape: b.build(props[name])})
			}
		}
		if ap, ok := s["additionalProperties"]; ok {
			if v, isBool := ap.(bool); isBool && !v {
				// The validator reports the property by name; its value is not looked at.
				sh.other = openShape
			} else {
				sh.other = b.build(ap)
			}
		}
		if items, ok := s["items"]; ok {
			sh.items = b.build(items)
			sh.unitItems = sh.items != nil && sh.items.mode == modeUnit && onlyKeywords(keywords, "type", "items")
		}
		return sh
	}
	return nil
}

func onlyKeywords(keywords []string, allowed ...string) bool {
	for _, k := range keywords {
		if !slices.Contains(allowed, k) {
			return false
		}
	}
	return true
}

// enum returns a modeEnum shape for a schema made of an enum of strings and an optional
// type, or nil.
func (b *shapeBuilder) enum(s map[string]any, keywords []string) *shape {
	for _, k := range keywords {
		if k != "type" && k != "enum" {
			return nil
		}
	}
	members, ok := s["enum"].([]any)
	if !ok {
		return nil
	}
	sh := &shape{mode: modeEnum}
	for _, m := range members {
		str, ok := m.(string)
		if !ok {
			return nil
		}
		sh.maxEnum = max(sh.maxEnum, len(str))
	}
	return sh
}

func (b *shapeBuilder) ref(ref string) *shape {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || strings.Contains(name, "/") || strings.Contains(name, "~") {
		return nil
	}
	if u, ok := b.units[name]; ok {
		return u
	}
	if sh, ok := b.done[name]; ok {
		return sh
	}
	def, ok := b.defs[name]
	if !ok {
		return nil
	}
	// Register a placeholder first so that recursive definitions (a block's content holds
	// blocks) resolve to the same shape.
	sh := &shape{}
	b.done[name] = sh
	built := b.build(def)
	if built == nil {
		// Unknown: decode in full. A placeholder already handed out must say so too.
		*sh = shape{mode: modeFull}
		b.done[name] = nil
		return nil
	}
	*sh = *built
	return sh
}

// prop returns the property whose name is the bytes name.
func (s *shape) prop(name []byte) (prop, bool) {
	for _, p := range s.props {
		if p.name == string(name) {
			return p, true
		}
	}
	return prop{}, false
}

// child returns the shape of property name, or of the other properties.
func (s *shape) child(name string) *shape {
	if p, ok := s.prop([]byte(name)); ok {
		return p.shape
	}
	return s.other
}

// String describes a shape, for tests and debugging.
func (s *shape) String() string {
	if s == nil {
		return "full*"
	}
	switch s.mode {
	case modeOpen:
		return "open"
	case modeTypeOnly:
		return "type"
	case modeEnum:
		return fmt.Sprintf("enum(%d)", s.maxEnum)
	case modeUnit:
		return "unit(" + s.unit.name + ")"
	}
	return "full"
}
