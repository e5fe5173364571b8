package jsonlex_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// stdValue is encoding/json's encoding of v by an Encoder without HTML escaping, indented
// with indent when it is not empty, without Encode's newline.
func stdValue(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// checkValue fails unless AppendValue writes what encoding/json writes for v, compact and
// with each of a few indents, or both refuse it.
func checkValue(t *testing.T, v any) {
	t.Helper()
	for _, indent := range []string{"", " ", "\t", "  "} {
		want, stdErr := stdValue(v, indent)
		got, err := jsonlex.AppendValue([]byte("p"), v, indent)
		if (err != nil) != (stdErr != nil) {
			t.Fatalf("AppendValue(%#v, %q): error %v; encoding/json: %v", v, indent, err, stdErr)
		}
		if err != nil {
			if string(got) != "p" {
				t.Fatalf("AppendValue(%#v, %q) failed with %v but changed dst: %q", v, indent, err, got)
			}
			continue
		}
		if !bytes.Equal(got, append([]byte("p"), want...)) {
			t.Fatalf("AppendValue(%#v, %q):\ngot  %s\nwant p%s", v, indent, got, want)
		}
	}
}

// valueSamples are trees as Unmarshal gives them (a notebook among them) and the other
// types AppendValue takes.
var valueSamples = []string{
	`{"cells":[{"cell_type":"code","execution_count":null,"id":"a1","metadata":{},"outputs":[],"source":["x = 1\n","print(x)"]},` +
		`{"cell_type":"markdown","metadata":{"tags":["<b>&"]},"source":"# Title \u2028 é"}],"metadata":{"kernelspec":{"name":"python3"}},"nbformat":4,"nbformat_minor":5}`,
	`[]`, `{}`, `[[],{},[{}],{"":[]}]`, `null`, `true`, `"s"`, `0`, `-0`, `1e-7`, `1e21`, `123456789012345678901234`,
	`0.000001`, `-1.5e-300`, `1.7976931348623157e308`, `[1,2.5,-3e5,null,false,"\u0000\u001f\"\\\/"]`,
	`{"b":1,"a":2,"B":3,"é":4,"\u00e9x":5,"a\u0000":6,"":7}`,
}

func TestAppendValueMatchesJSON(t *testing.T) {
	for _, s := range valueSamples {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		checkValue(t, v)
	}
	for _, v := range []any{
		map[string]any{"type": "image", "source": map[string]string{"type": "base64", "data": "AAAA", "media_type": "image/png"}},
		map[string]string(nil), map[string]any(nil), []any(nil), []string(nil), []string{}, []string{"a", "<b>"},
		map[string]any{"raw": json.RawMessage(" { \"a\" : [1, 2] } "), "nil raw": json.RawMessage(nil), "strs": []string{"x"}},
		"bad \xff utf-8 \xed\xa0\x80", map[string]any{"k\xff": "v\xfe"},
	} {
		checkValue(t, v)
	}
}

// TestAppendValueErrors: what encoding/json refuses is refused, naming its place; so are
// types outside the list and trees nested too deep.
func TestAppendValueErrors(t *testing.T) {
	deep := any(nil)
	for range jsonlex.MaxDepth + 1 {
		deep = []any{deep}
	}
	for _, tt := range []struct {
		v    any
		want string
	}{
		{math.NaN(), "encode JSON: the value: unsupported value: NaN"},
		{map[string]any{"cells": []any{1.0, map[string]any{"x": math.Inf(-1)}}}, `encode JSON: ["cells"][1]["x"]: unsupported value: -Inf`},
		{[]any{json.RawMessage("{")}, "encode JSON: [0]: raw value is not valid JSON"},
		{[]any{json.RawMessage{}}, "encode JSON: [0]: raw value is not valid JSON"},
		{map[string]any{"n": 3}, `encode JSON: ["n"]: unsupported type int`},
		{struct{}{}, "encode JSON: the value: unsupported type struct {}"},
		{deep, "exceeded max depth of 10000"},
	} {
		for _, indent := range []string{"", " "} {
			got, err := jsonlex.AppendValue([]byte("p"), tt.v, indent)
			if err == nil || !strings.Contains(err.Error(), tt.want) || string(got) != "p" {
				t.Errorf("AppendValue(%.40v, %q) = %q, %v; want error %q", tt.v, indent, got, err, tt.want)
			}
		}
	}
	// The first three are encoding/json's errors too.
	for _, v := range []any{math.NaN(), []any{json.RawMessage("{")}, []any{json.RawMessage{}}} {
		if _, err := stdValue(v, ""); err == nil {
			t.Errorf("encoding/json encoded %#v", v)
		}
	}
}

// FuzzAppendValue holds AppendValue to encoding/json on the trees Unmarshal makes of the
// input, and on trees with the fuzzer's string, float and raw value in them (strings with
// invalid UTF-8, NaN, raw values that are not JSON, which Unmarshal never gives).
func FuzzAppendValue(f *testing.F) {
	for _, s := range valueSamples {
		f.Add([]byte(s), "k", 1.5)
	}
	f.Add([]byte(" [1, {\"a\" : 2}] "), "bad \xff", math.Inf(1))
	f.Add([]byte("[1,]"), "\u2028<&>", 1e-7)
	f.Fuzz(func(t *testing.T, b []byte, s string, x float64) {
		var v any
		if json.Unmarshal(b, &v) == nil {
			checkValue(t, v)
		}
		checkValue(t, map[string]any{s: x, "raw": json.RawMessage(b), "list": []any{s, x, nil, map[string]string{s: s}}, "strs": []string{s}})
	})
}
