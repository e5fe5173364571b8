package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// The fast paths read a request body in one pass, into the same request the slow paths
// (encoding/json into maps, raw messages and structs, level by level) make. They give up
// with errSlow on anything unusual, and the slow path then decides.

// fastObject reads the request object: the fields named in fields go to f (by index),
// every other field becomes a param.
func fastObject(raw []byte, fields []string, f func(d *scanner, field int) error) (map[string]json.RawMessage, error) {
	t := trimJSON(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, errSlow
	}
	d := newScanner(t)
	params := map[string]json.RawMessage{}
	var seen uint64
	if err := d.enter('{'); err != nil {
		return nil, err
	}
	for n := 0; ; n++ {
		ok, err := d.more('}', n)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		idx := -1
		for i, name := range fields {
			if string(k) == name {
				idx = i
				break
			}
		}
		if idx >= 0 {
			if seen&(1<<idx) != 0 {
				return nil, errSlow
			}
			seen |= 1 << idx
			err = f(d, idx)
		} else {
			if _, dup := params[string(k)]; dup {
				return nil, errSlow
			}
			var v json.RawMessage
			v, err = d.kept()
			params[string(k)] = v
		}
		if err != nil {
			return nil, err
		}
	}
	return params, d.end()
}

// fastStream reads the stream field.
func fastStream(d *scanner, dst *bool) error {
	bad, err := d.optBool(dst)
	if bad {
		return errSlow
	}
	return err
}

// fastArray calls f for each element of an array (null for a null array).
func fastArray(d *scanner, f func() error) error {
	if err := d.enter('['); err != nil {
		return err
	}
	for n := 0; ; n++ {
		ok, err := d.more(']', n)
		if err != nil || !ok {
			return err
		}
		if err := f(); err != nil {
			return err
		}
	}
}

// fastFields calls f with the index in names of each field of an object; unknown
// fields are skipped, a field seen twice or a key matching a name only when case is
// ignored takes the slow path.
func fastFields(d *scanner, names []string, f func(field int) error) error {
	if err := d.enter('{'); err != nil {
		return err
	}
	var seen uint64
	for n := 0; ; n++ {
		ok, err := d.more('}', n)
		if err != nil || !ok {
			return err
		}
		k, err := d.key()
		if err != nil {
			return err
		}
		idx := -1
		for i, name := range names {
			if string(k) == name {
				idx = i
				break
			}
		}
		if idx < 0 {
			if folds(k, names...) {
				return errSlow
			}
			if _, err := d.skip(); err != nil {
				return err
			}
			continue
		}
		if seen&(1<<idx) != 0 {
			return errSlow
		}
		seen |= 1 << idx
		if err := f(idx); err != nil {
			return err
		}
	}
}

// fastTargets reads an object's fields (as fastFields) into the target at each name's
// place: a *string or *bool with optString or optBool, where a value of another type sets
// the field's bit in bad; an *int with fastInt; a *[]byte or *json.RawMessage takes the
// value's bytes (in the input: copy what outlives it); a func() error reads the value
// itself.
func fastTargets(d *scanner, names []string, targets ...any) (bad uint16, err error) {
	err = fastFields(d, names, func(field int) error {
		var b bool
		var err error
		switch p := targets[field].(type) {
		case *string:
			b, err = d.optString(p)
		case *bool:
			b, err = d.optBool(p)
		case *int:
			err = fastInt(d, p)
		case *[]byte:
			*p, err = d.raw()
		case *json.RawMessage:
			*p, err = d.raw()
		case func() error:
			err = p()
		}
		if b {
			bad |= 1 << field
		}
		return err
	})
	return bad, err
}

// fastList calls f for each element of an array; null is no elements.
func fastList(d *scanner, f func() error) error {
	if null, err := d.nullOr('['); null || err != nil {
		return err
	}
	return fastArray(d, f)
}

// fastTools reads a request's tools: of each entry its type, name and description and the
// raw value of schemaKey, which tool makes into the tool (a null entry is all empty). An
// entry that is not an object, or a field of the wrong type, takes the slow path.
func fastTools(d *scanner, schemaKey string, tool func(typ string, t tape.Tool, schema json.RawMessage) tape.Tool) ([]tape.Tool, error) {
	var tools []tape.Tool
	err := fastList(d, func() error {
		var typ string
		var t tape.Tool
		var schema json.RawMessage
		switch d.peek() {
		case 'n':
			if _, err := d.skip(); err != nil {
				return err
			}
		case '{':
			bad, err := fastTargets(d, []string{"type", "name", "description", schemaKey}, &typ, &t.Name, &t.Description, &schema)
			if err == nil && bad != 0 {
				err = errSlow
			}
			if err != nil {
				return err
			}
		default:
			return errSlow
		}
		tools = append(tools, tool(typ, t, bytes.Clone(schema)))
		return nil
	})
	return tools, err
}

// fastRequest reads a request object: the fields named in top but the last, which is
// the stream flag, go to field (by index), every other field becomes a param.
func fastRequest(raw []byte, top []string, field func(d *scanner, i int, r *request) error) (request, error) {
	var r request
	params, err := fastObject(raw, top, func(d *scanner, i int) error {
		if i == len(top)-1 {
			return fastStream(d, &r.stream)
		}
		return field(d, i, &r)
	})
	if err != nil {
		return request{}, err
	}
	r.params = params
	return r, nil
}

// scanStruct decodes raw as json.Unmarshal into a struct does, in one pass: the fields
// named go to their targets (see fastTargets), null leaves them alone. Anything but a
// plain object whose fields have their target's type takes the slow path.
func scanStruct(raw []byte, names []string, targets ...any) error {
	d := newScanner(raw)
	if d.peek() == 'n' {
		if err := d.literal("null"); err != nil {
			return err
		}
		return d.end()
	}
	bad, err := fastTargets(d, names, targets...)
	if err == nil && bad != 0 {
		err = errSlow
	}
	if err != nil {
		return err
	}
	return d.end()
}

// str reads a string field; a type error takes the slow path.
func fastString(d *scanner, dst *string) error {
	bad, err := d.optString(dst)
	if bad {
		return errSlow
	}
	return err
}

// fastInt reads an int field of a struct as encoding/json does: null leaves it alone; a
// number that is not an integer in range, or another kind of value, takes the slow path.
func fastInt(d *scanner, dst *int) error {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	raw, err := d.raw()
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(string(raw), 10, 0)
	if err != nil {
		return errSlow
	}
	*dst = int(n)
	return nil
}

var anthropicTop = []string{"messages", "system", "tools", "stream"}

func anthropicRequestFast(raw []byte) (request, error) {
	r, err := fastRequest(raw, anthropicTop, func(d *scanner, field int, r *request) error {
		switch field {
		case 0:
			return fastList(d, func() error {
				var m tape.Message
				switch d.peek() {
				case 'n':
					_, err := d.skip()
					r.messages = append(r.messages, m)
					return err
				case '{':
				default:
					return errSlow
				}
				err := fastFields(d, []string{"role", "content"}, func(field int) error {
					if field == 0 {
						return fastString(d, &m.Role)
					}
					var err error
					m.Content, err = anthropicContentFast(d)
					return err
				})
				m.Role = role(m.Role)
				r.messages = append(r.messages, m)
				return err
			})
		case 1:
			return fastStringOrList(d, func(s string) { r.system = s }, func() error {
				var texts []string
				err := fastArray(d, func() error {
					if null, err := d.nullOr('{'); null || err != nil {
						return err
					}
					var typ, text string
					err := fastFields(d, []string{"type", "text"}, func(field int) error {
						if field == 0 {
							return fastString(d, &typ)
						}
						return fastString(d, &text)
					})
					if typ == "text" {
						texts = append(texts, text)
					}
					return err
				})
				r.system = strings.Join(texts, "\n")
				return err
			})
		case 2:
			var err error
			r.tools, err = fastTools(d, "input_schema", func(typ string, t tape.Tool, schema json.RawMessage) tape.Tool {
				t.Kind, t.InputSchema = typ, schema
				if t.Kind == "" || t.Kind == "custom" {
					t.Kind = "function"
				}
				if t.Name == "" {
					t.Name = typ
				}
				return t
			})
			return err
		}
		return nil
	})
	if err != nil {
		return request{}, err
	}
	if r.messages == nil {
		r.messages = []tape.Message{}
	}
	return r, nil
}

// anthropicContentFast reads a message's or a tool result's content.
func anthropicContentFast(d *scanner) ([]tape.Block, error) {
	return fastContent(d, func() (tape.Block, error) { return anthropicBlockFast(d) })
}

// fastContentAt reads with read the content at i, a field skipped before its block's type
// said how to read it, and comes back; i < 0, the field was absent, is no content.
func fastContentAt(d *scanner, i int, read func(d *scanner) ([]tape.Block, error)) ([]tape.Block, error) {
	if i < 0 {
		return nil, nil
	}
	var content []tape.Block
	err := d.at(i, func() (err error) {
		content, err = read(d)
		return err
	})
	return content, err
}

// fastStringOrList reads a value that the wire formats allow to be null (nothing to
// read), a string (given to str) or a list (read by list, from its '['); anything else
// takes the slow path.
func fastStringOrList(d *scanner, str func(s string), list func() error) error {
	switch d.peek() {
	case 'n':
		_, err := d.skip()
		return err
	case '"':
		s, err := d.str()
		if err == nil {
			str(s)
		}
		return err
	case '[':
		return list()
	}
	return errSlow
}

// fastContent reads content that is null, a string (one text block) or a list whose items
// item reads.
func fastContent(d *scanner, item func() (tape.Block, error)) ([]tape.Block, error) {
	var out []tape.Block
	err := fastStringOrList(d, func(s string) {
		if s != "" {
			out = []tape.Block{textBlock(s)}
		}
	}, func() error {
		out = []tape.Block{}
		return fastArray(d, func() error {
			b, err := item()
			out = append(out, b)
			return err
		})
	})
	return out, err
}

var anthropicBlockFields = []string{"type", "text", "thinking", "id", "name", "input", "tool_use_id", "content", "is_error"}

// fastBlock reads a content block: null is an other block, an object (starting at start)
// is read by object, anything else takes the slow path.
func fastBlock(d *scanner, object func(start int) (tape.Block, error)) (tape.Block, error) {
	switch d.peek() {
	case 'n':
		raw, err := d.raw()
		return rawBlock(tape.BlockOther, raw), err
	case '{':
		return object(d.i)
	}
	return tape.Block{}, errSlow
}

func anthropicBlockFast(d *scanner) (tape.Block, error) {
	return fastBlock(d, func(start int) (tape.Block, error) { return anthropicObjectFast(d, start) })
}

// anthropicObjectFast reads a content block that is an object.
func anthropicObjectFast(d *scanner, start int) (tape.Block, error) {
	var (
		typ, text, thinking, id, name, toolUseID string
		input                                    []byte
		contents                                 []tape.Block
		contentAt                                = -1
		contentDone, isError                     bool
	)
	content := func() (err error) {
		// Read as a tool result's content whatever the type (which may come later); if
		// that fails, skip it and see once the type is known.
		d.ws()
		at, depth := d.i, d.depth
		if contents, err = anthropicContentFast(d); err == nil {
			contentDone = true
			return nil
		}
		d.i, d.depth = at, depth
		contentAt = at
		contents = nil
		_, err = d.skip()
		return err
	}
	bad, err := fastTargets(d, anthropicBlockFields, &typ, &text, &thinking, &id, &name, &input, &toolUseID, content, &isError)
	if err != nil {
		return tape.Block{}, err
	}
	raw := d.b[start:d.i]
	if bad&1 != 0 {
		return tape.Block{}, errSlow
	}
	switch typ {
	case "text":
		if bad&(1<<1) != 0 {
			return tape.Block{}, errSlow
		}
		return textBlock(text), nil
	case "thinking":
		if bad&(1<<2) != 0 {
			return tape.Block{}, errSlow
		}
		return tape.Block{Type: tape.BlockThinking, Text: thinking}, nil
	case "redacted_thinking":
		return tape.Block{Type: tape.BlockThinking}, nil
	case "tool_use":
		if bad&(1<<3|1<<4) != 0 {
			return tape.Block{}, errSlow
		}
		return tape.Block{Type: tape.BlockToolUse, ID: id, Name: name, Input: objectInputValid(input)}, nil
	case "tool_result":
		if bad&(1<<6|1<<8) != 0 {
			return tape.Block{}, errSlow
		}
		if !contentDone {
			if contents, err = fastContentAt(d, contentAt, anthropicContentFast); err != nil {
				return tape.Block{}, err
			}
		}
		return tape.Block{Type: tape.BlockToolResult, ToolCallID: toolUseID, Content: contents, IsError: isError}, nil
	case "image":
		return rawBlock(tape.BlockImage, raw), nil
	}
	return rawBlock(tape.BlockOther, raw), nil
}

var responsesTop = []string{"input", "instructions", "tools", "stream"}

func responsesRequestFast(raw []byte) (request, error) {
	return fastRequest(raw, responsesTop, func(d *scanner, field int, r *request) error {
		switch field {
		case 0:
			return fastStringOrList(d, func(s string) {
				r.messages = []tape.Message{{Role: "user", Content: []tape.Block{textBlock(s)}}}
			}, func() error {
				r.messages = []tape.Message{}
				return fastArray(d, func() error {
					m, err := responsesItemFast(d)
					r.messages = append(r.messages, m)
					return err
				})
			})
		case 1:
			if d.peek() == '"' {
				var err error
				r.system, err = d.str()
				return err
			}
			_, err := d.skip()
			return err
		case 2:
			var err error
			r.tools, err = fastTools(d, "parameters", func(typ string, t tape.Tool, params json.RawMessage) tape.Tool {
				t.Kind = typ
				if t.Kind == "function" {
					t.InputSchema = params
				}
				if t.Name == "" {
					t.Name = t.Kind
				}
				return t
			})
			return err
		}
		return nil
	})
}

var responsesItemFields = []string{"type", "role", "content", "id", "call_id", "name", "arguments", "input", "action", "output", "summary"}

// responsesItemFast reads an input item, as responsesItem does.
func responsesItemFast(d *scanner) (tape.Message, error) {
	switch d.peek() {
	case 'n':
		_, err := d.skip()
		return tape.Message{}, err
	case '{':
	default:
		return tape.Message{}, errSlow
	}
	start := d.i
	var (
		typ, rol, id, callID, name, args, input string
		content                                 []tape.Block
		contentAt, outputAt                     = -1, -1
		contentDone                             bool
		action, output, contentRaw              []byte
		summary                                 []string
		summaryBad                              bool
	)
	contentField := func() (err error) {
		d.ws()
		contentAt = d.i
		if typ == "message" {
			content, err = responsesContentFast(d)
			contentDone = true
		} else {
			contentRaw, err = d.raw()
		}
		return err
	}
	outputField := func() (err error) {
		d.ws()
		outputAt = d.i
		output, err = d.raw()
		return err
	}
	summaryField := func() (err error) {
		var b bool
		summary, b, err = summaryFast(d)
		summaryBad = b
		return err
	}
	bad, err := fastTargets(d, responsesItemFields, &typ, &rol, contentField, &id, &callID, &name, &args, &input, &action, outputField, summaryField)
	if err != nil {
		return tape.Message{}, err
	}
	if summaryBad {
		bad |= 1 << 10
	}
	raw := d.b[start:d.i]
	if bad&1 != 0 {
		return tape.Message{}, errSlow
	}
	assistant := func(b tape.Block) tape.Message {
		return tape.Message{Role: "assistant", Content: []tape.Block{b}}
	}
	decoded := typ == "" || typ == "message" || typ == "function_call" || typ == "custom_tool_call" ||
		typ == "local_shell_call" || typ == "reasoning" || strings.HasSuffix(typ, "_output")
	if decoded && bad != 0 {
		return tape.Message{}, errSlow
	}
	switch {
	case typ == "" || typ == "message":
		if !contentDone {
			if content, err = fastContentAt(d, contentAt, responsesContentFast); err != nil {
				return tape.Message{}, err
			}
		}
		return tape.Message{Role: role(rol), Content: content}, nil
	case typ == "function_call":
		return assistant(tape.Block{Type: tape.BlockToolUse, ID: callID, Name: name, Input: argsInput(args)}), nil
	case typ == "custom_tool_call":
		return assistant(tape.Block{Type: tape.BlockToolUse, ID: callID, Name: name, Input: customInput(input)}), nil
	case typ == "local_shell_call":
		if callID == "" {
			callID = id
		}
		return assistant(tape.Block{Type: tape.BlockToolUse, ID: callID, Name: "local_shell", Input: objectInputValid(action)}), nil
	case typ == "reasoning":
		if len(summary) == 0 && len(contentRaw) > 0 && string(contentRaw) != "null" {
			return tape.Message{}, errSlow // raw reasoning text: rare
		}
		return assistant(tape.Block{Type: tape.BlockThinking, Text: strings.Join(summary, "\n")}), nil
	case strings.HasSuffix(typ, "_output"):
		if callID == "" {
			callID = id
		}
		var content []tape.Block
		if len(output) > 0 && output[0] == '{' {
			content = []tape.Block{rawBlock(tape.BlockOther, output)}
		} else if content, err = fastContentAt(d, outputAt, responsesContentFast); err != nil {
			return tape.Message{}, err
		}
		return tape.Message{Role: "tool", Content: []tape.Block{{Type: tape.BlockToolResult, ToolCallID: callID, Content: content}}}, nil
	}
	return assistant(rawBlock(tape.BlockOther, raw)), nil
}

// summaryFast reads a reasoning item's summary, a list of {text}; bad is a type error.
func summaryFast(d *scanner) (texts []string, bad bool, err error) {
	switch d.peek() {
	case 'n':
		_, err := d.skip()
		return nil, false, err
	case '[':
	default:
		_, err := d.skip()
		return nil, true, err
	}
	texts = []string{}
	err = fastArray(d, func() error {
		var text string
		switch d.peek() {
		case 'n':
			_, err := d.skip()
			texts = append(texts, text)
			return err
		case '{':
		default:
			bad = true
			_, err := d.skip()
			return err
		}
		b, err := fastTargets(d, []string{"text"}, &text)
		bad = bad || b != 0
		texts = append(texts, text)
		return err
	})
	return texts, bad, err
}

// responsesContentFast reads a message item's content or a call output.
func responsesContentFast(d *scanner) ([]tape.Block, error) {
	return fastContent(d, func() (tape.Block, error) {
		return fastBlock(d, func(start int) (tape.Block, error) {
			var typ, text string
			bad, err := fastTargets(d, responsesPartFields, &typ, &text)
			if err != nil {
				return tape.Block{}, err
			}
			if bad&1 != 0 {
				return tape.Block{}, errSlow
			}
			switch typ {
			case "input_text", "output_text", "text":
				if bad != 0 {
					return tape.Block{}, errSlow
				}
				return textBlock(text), nil
			case "input_image":
				return rawBlock(tape.BlockImage, d.b[start:d.i]), nil
			}
			return rawBlock(tape.BlockOther, d.b[start:d.i]), nil
		})
	})
}

var responsesPartFields = []string{"type", "text"}
