package tape

import (
	"reflect"

	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFieldTableCoversTypes holds the field table to the Go types: each object's keys,
// in order, are its struct's JSON names (the order encoding/json writes, the reference
// the decoder falls back to), and a member is left out exactly where the struct's tag says
// omitempty or omitzero. A field added to a type and not to the table, or the other way
// round, fails here.
func TestFieldTableCoversTypes(t *testing.T) {
	for _, c := range []struct {
		typ   reflect.Type
		shape *shape
		omits []bool
	}{
		{reflect.TypeFor[Tape](), &tapeTable().shape, omits(tapeTable())},
		{reflect.TypeFor[Meta](), &metaTable().shape, omits(metaTable())},
		{reflect.TypeFor[Redaction](), &redactionTable().shape, omits(redactionTable())},
		{reflect.TypeFor[Workspace](), &workspaceTable().shape, omits(workspaceTable())},
		{reflect.TypeFor[FileEntry](), &fileEntryTable().shape, omits(fileEntryTable())},
		{reflect.TypeFor[Limits](), &limitsTable().shape, omits(limitsTable())},
		{reflect.TypeFor[ForkedFrom](), &forkedFromTable().shape, omits(forkedFromTable())},
		{reflect.TypeFor[Ended](), &endedTable().shape, omits(endedTable())},
		{reflect.TypeFor[Thread](), &threadTable().shape, omits(threadTable())},
		{reflect.TypeFor[Step](), &stepTable().shape, omits(stepTable())},
		{reflect.TypeFor[Request](), &requestTable().shape, omits(requestTable())},
		{reflect.TypeFor[Message](), &messageTable().shape, omits(messageTable())},
		{reflect.TypeFor[Tool](), &toolTable().shape, omits(toolTable())},
		{reflect.TypeFor[Response](), &responseTable().shape, omits(responseTable())},
		{reflect.TypeFor[Usage](), &usageTable().shape, omits(usageTable())},
		{reflect.TypeFor[Chunk](), &chunkTable().shape, omits(chunkTable())},
		{reflect.TypeFor[ToolCall](), &toolCallTable().shape, omits(toolCallTable())},
		{reflect.TypeFor[ToolResult](), &toolResultTable().shape, omits(toolResultTable())},
		{reflect.TypeFor[Timing](), &timingTable().shape, omits(timingTable())},
		{reflect.TypeFor[Block](), &blockTable().shape, omits(blockTable())},
		{reflect.TypeFor[Digest](), &digestTable().shape, omits(digestTable())},
	} {
		var keys []string
		var want []bool
		for i := range c.typ.NumField() {
			f := c.typ.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			keys = append(keys, name)
			want = append(want, strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero"))
		}
		if !reflect.DeepEqual(keys, c.shape.keys) {
			t.Errorf("%s: the table has %q, the struct %q", c.typ, c.shape.keys, keys)
			continue
		}
		if !reflect.DeepEqual(want, c.omits) {
			t.Errorf("%s: the table leaves out %v, the struct's tags %v", c.typ, c.omits, want)
		}
	}
}

func omits[T any](o *object[T]) []bool {
	var out []bool
	for _, f := range o.fields {
		out = append(out, f.omit != nil)
	}
	return out
}

func TestCanonicalEscapes(t *testing.T) {
	for body, want := range map[string][2]bool{ // without html, with html
		`plain`:                 {true, true},
		`a\"b\\c\n\r\t\b\f`:     {true, true},
		`\u001f\u0000`:          {true, true},
		`\u001F`:                {false, false}, // encoding/json writes lower-case hex
		`\u000a`:                {false, false}, // it has a short escape
		`\u2028 \u2029`:         {true, true},
		`\u003c\u003e\u0026`:    {false, true},
		`\/`:                    {false, false},
		`\u0041`:                {false, false},
		`\ud83d\ude00`:          {false, false}, // encoding/json writes the character
		`x\u00e9y`:              {false, false},
		`end\\`:                 {true, true},
		`\u001f\u001F`:          {false, false},
		`ok\n then \u0041 late`: {false, false},
	} {
		assert.Equal(t, want[0], canonicalEscapes([]byte(body), false), "%s", body)
		assert.Equal(t, want[1], canonicalEscapes([]byte(body), true), "%s html", body)
	}
}
