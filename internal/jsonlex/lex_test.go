package jsonlex_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

var seeds = []string{
	`{}`, `[]`, `""`, `"a\u00e9\ud83d\ude00\n"`, `"\ud800"`, `"\ud800\u0041"`, "\"\xff\xfe\"", `"héllo wörld, and then some more"`,
	`0`, `-0`, `1.5e+10`, `01`, `1.`, `.5`, `-`, `1e`, `1E-`, `true`, `tru`, `nul`, `falsey`,
	`{"a":[1,2,{"b":null}],"c":"d"}`, ` { "a" : [ 1 , 2 ] } `, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{1:2}`,
	`"ctl` + "\x01" + `"`, `"unterminated`, `"bad \q escape"`, `"\u12G4"`, `"abcdefghijklmnopqrstuvwxyz\"0123456789"`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 100) + strings.Repeat("]", 100),
	"{\"k\":\"\xe2\x82\xac tail past eight bytes\"}", `{"a":1}x`, "\t\n\r 7 \n",
	// Runs of every length between escapes and bytes of 0x80 and above, for Unquote's word loop.
	"\"0123456789\\n01234567\xc3\xa9890123\\\"\\\\abcdefgh\xff\\u00e9ijklmnopqr\\ud83d\\ude00stuvwxyz\\t\"",
}

func FuzzLex(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgainstStdlib(t, b)
	})
}

func TestLex(t *testing.T) {
	for _, s := range seeds {
		checkAgainstStdlib(t, []byte(s))
	}
}

// checkAgainstStdlib holds every function to encoding/json's verdict and values.
func checkAgainstStdlib(t *testing.T, b []byte) {
	valid := json.Valid(b)
	require.Equal(t, valid, jsonlex.Valid(b), "Valid(%q)", b)

	got, ok := jsonlex.Compact([]byte("prefix"), b)
	require.Equal(t, valid, ok, "Compact(%q)", b)
	if ok {
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, b))
		require.Equal(t, "prefix"+want.String(), string(got))
	} else {
		require.Equal(t, "prefix", string(got))
	}

	i := jsonlex.Space(b, 0)
	if valid {
		// The value with anything after it: CompactValue takes the value and stops.
		withTail := append(append([]byte(nil), b[i:]...), ` ,]x`...)
		out, n, ok := jsonlex.CompactValue(nil, withTail)
		require.True(t, ok, "CompactValue(%q)", withTail)
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, b))
		require.Equal(t, want.String(), string(out))
		require.Equal(t, `,]x`, string(withTail[jsonlex.Space(withTail, n):]), "CompactValue(%q) took %d bytes", withTail, n)
	}
	if i < len(b) && b[i] == '"' {
		end, s, err := jsonlex.String(b, i)
		if err == nil {
			var want string
			require.NoError(t, json.Unmarshal(b[i:end], &want), "%q", b[i:end])
			body := b[i+1 : end-1]
			assert.Equal(t, want, string(jsonlex.Unquote(nil, body)), "Unquote(%q)", body)
			assert.Equal(t, bytes.IndexByte(body, '\\') >= 0, s&jsonlex.Escaped != 0)
			assert.Equal(t, bytes.ContainsFunc(body, func(r rune) bool { return r >= utf8.RuneSelf }), s&jsonlex.NonASCII != 0, "%q", body)
			if s.Plain(body) {
				assert.Equal(t, want, string(body))
			}
		} else {
			assert.False(t, json.Valid(b[i:]), "String(%q) failed: %v", b, err)
			assert.LessOrEqual(t, err.Off, len(b))
		}
	}
	if i < len(b) && (b[i] == '-' || '0' <= b[i] && b[i] <= '9') {
		end, integer, err := jsonlex.Number(b, i)
		if err == nil {
			var n json.Number
			require.NoError(t, json.Unmarshal(b[i:end], &n), "%q", b[i:end])
			assert.Equal(t, !bytes.ContainsAny(b[i:end], ".eE"), integer)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		in, msg string
		off     int
		eof     bool
	}{
		{`"abc`, "unexpected end of input in a string", 4, true},
		{`"a\x"`, `invalid escape character 'x' in a string`, 3, false},
		{`"a\u12"`, `invalid character '"' in a \u escape`, 6, false},
		{"\"a\x01\"", `invalid control character '\x01' in a string`, 2, false},
		{`1.x`, `invalid character 'x' after a decimal point in a number`, 2, false},
		{`1e`, `unexpected end of input in a number's exponent`, 2, true},
		{`trux`, `invalid character 'x' in literal true`, 3, false},
		{`[1 2]`, `invalid character '2' after an array element (want ',' or ']')`, 3, false},
		{`[1`, `unexpected end of input after an array element`, 2, true},
		{`{"a" 1}`, `invalid character '1' after an object key (want ':')`, 5, false},
		{`{"a":1`, `unexpected end of input after an object value`, 6, true},
		{`{"a":1]`, `invalid character ']' after an object value (want ',' or '}')`, 6, false},
		{`{"a":1,}`, `invalid character '}' looking for the beginning of an object key`, 7, false},
		{`{"a":1,`, `unexpected end of input looking for an object key`, 7, true},
		{`[`, `unexpected end of input looking for a value`, 1, true},
		{strings.Repeat("[", jsonlex.MaxDepth+1), `exceeded max depth of 10000`, jsonlex.MaxDepth, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := jsonlex.Skip([]byte(tc.in), 0)
			require.NotNil(t, err)
			assert.Equal(t, tc.msg, err.Msg)
			assert.Equal(t, tc.off, err.Off)
			assert.Equal(t, tc.eof, err.EOF)
		})
	}
	line, col := jsonlex.LineCol([]byte("{\n  \"a\": x"), 9)
	assert.Equal(t, [2]int{2, 8}, [2]int{line, col})
}

// unquoted keeps TestUnquoteString's results alive, so that they are allocated as in use.
var unquoted string

// TestUnquoteString: the value encoding/json gives each string, in one allocation (a
// string(Unquote(...)) made two, doubling the schema decoder's bytes on escaped strings).
func TestUnquoteString(t *testing.T) {
	for _, tt := range []struct {
		lit    string
		allocs float64
	}{
		{`"plain"`, 1}, {`"tab\tquote\" slash\/ back\\"`, 1}, {`"\u00e9t\u00e9 \ud83d\ude00"`, 1},
		{`"lone \ud800 surrogate"`, 1}, {`"` + strings.Repeat(`line\n`, 500) + `"`, 1},
		{"\"bad \xff utf-8\"", 2}, // U+FFFD is longer than the byte it replaces: the buffer grows
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(tt.lit), &want), tt.lit)
		body := []byte(tt.lit[1 : len(tt.lit)-1])
		assert.Equal(t, want, jsonlex.UnquoteString(body), tt.lit)
		allocs := testing.AllocsPerRun(10, func() { unquoted = jsonlex.UnquoteString(body) })
		assert.Equal(t, tt.allocs, allocs, "allocations for %.20s", tt.lit)
	}
}
