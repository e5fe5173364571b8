package redact

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

func TestTokenLenAndCut(t *testing.T) {
	for s, want := range map[string]int{
		"ghp_abc123 rest": len("ghp_abc123"),
		`AKIAXYZ","x":1`:  len("AKIAXYZ"),
		"tok\\nnext":      len("tok"),
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\ntail": len("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"),
		"whole": len("whole"),
	} {
		require.Equal(t, want, tokenLen(s), s)
	}
	require.Equal(t, "a REDACTED b REDACTED", cut("a 1234 b 5678", []span{{2, 6}, {9, 13}}))
	require.Equal(t, "REDACTED!", cut("abcdef!", []span{{0, 4}, {2, 6}}), "overlapping spans merge")
}

// TestTape: a pattern is removed from text, never from an id; a finding whose pointer is
// not a string of the tape is an error; a sealed tape is sealed again and verifies.
func TestTape(t *testing.T) {
	tp, err := tape.LoadFile(filepath.Join("..", "..", "testdata", "anthropic-json.json"))
	require.NoError(t, err)
	var id string
	for _, s := range tp.Threads[0].Steps {
		if len(s.ToolCalls) > 0 {
			id = s.ToolCalls[0].ID
			break
		}
	}
	require.NotEmpty(t, id)
	tp.Meta.Labels["ticket"] = "see " + id + " and ACME-42"
	require.NoError(t, seal.Tape(tp, nil))
	res, err := Tape(tp, Options{Patterns: []*regexp.Regexp{regexp.MustCompile(regexp.QuoteMeta(id)), regexp.MustCompile(`ACME-\d+`)}})
	require.NoError(t, err)
	require.Equal(t, "see REDACTED and REDACTED", res.Tape.Meta.Labels["ticket"])
	data, err := tape.Marshal(res.Tape)
	require.NoError(t, err)
	require.Greater(t, strings.Count(string(data), id), 1, "the id stays where it is an id")
	require.True(t, res.Resealed)
	require.Contains(t, res.Tape.Meta.Redactions, tape.Redaction{Rule: "pattern:ACME-\\d+", Pointer: "/meta/labels/ticket"})
	v, err := seal.Verify(strings.NewReader(string(data)), nil)
	require.NoError(t, err)
	require.Equal(t, tape.DigestsOK, v.State, v.Problem)

	_, err = Tape(tp, Options{Findings: []Finding{{Pointer: "/meta/nope", Offset: 0, Rule: "x"}}})
	require.ErrorContains(t, err, "/meta/nope")
	_, err = Tape(tp, Options{Findings: []Finding{{Pointer: "/meta/labels/ticket", Offset: 999, Rule: "x"}}})
	require.ErrorContains(t, err, "outside the string")
}

// TestTapeKeys: a secret in a member name renames the member (to a name its object does
// not hold yet, compared as the strict reader compares), a secret in its value under it is
// removed too, and the redactions point at the new name, never the old.
func TestTapeKeys(t *testing.T) {
	tp, err := tape.LoadFile(filepath.Join("..", "..", "testdata", "anthropic-json.json"))
	require.NoError(t, err)
	secret := "ghp_" + strings.Repeat("k", 36)
	tp.Meta.Labels = map[string]string{"redacted": "mine", "x-" + secret: "tok " + secret, "plain": "p"}
	require.NoError(t, seal.Tape(tp, nil))
	ptr := "/meta/labels/x-" + secret
	res, err := Tape(tp, Options{Findings: []Finding{
		{Pointer: ptr, Key: true, Offset: 2, Length: len(secret), Rule: "github-pat"},
		{Pointer: ptr, Offset: 4, Length: len(secret), Rule: "github-pat"},
	}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"redacted": "mine", "x-REDACTED": "tok REDACTED", "plain": "p"}, res.Tape.Meta.Labels)
	require.ElementsMatch(t, []tape.Redaction{
		{Rule: "github-pat", Pointer: "/meta/labels/x-REDACTED"},
		{Rule: "github-pat", Pointer: "/meta/labels/x-REDACTED"},
	}, res.Removed)
	data, err := tape.Marshal(res.Tape)
	require.NoError(t, err)
	require.NotContains(t, string(data), secret)
	v, err := seal.Verify(strings.NewReader(string(data)), nil)
	require.NoError(t, err)
	require.Equal(t, tape.DigestsOK, v.State, v.Problem)

	// A name that would repeat another (in any letter case) gets a suffix.
	tp.Meta.Labels = map[string]string{"REDACTED": "mine", secret: "v"}
	res, err = Tape(tp, Options{Findings: []Finding{{Pointer: "/meta/labels/" + secret, Key: true, Offset: 0, Rule: "github-pat"}}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"REDACTED": "mine", "REDACTED-2": "v"}, res.Tape.Meta.Labels)
	require.Equal(t, []tape.Redaction{{Rule: "github-pat", Pointer: "/meta/labels/REDACTED-2"}}, res.Removed)

	_, err = Tape(tp, Options{Findings: []Finding{{Pointer: "/meta/labels/nope", Key: true, Rule: "x"}}})
	require.ErrorContains(t, err, "no member at /meta/labels/nope")
}

func TestMergedAndCut(t *testing.T) {
	require.Equal(t, []Span{{0, 6}, {9, 2}}, Merged([]Span{{9, 2}, {2, 4}, {0, 3}}))
	require.Equal(t, "REDACTEDxyREDACTED", Cut("abcdefxy12", []Span{{8, 2}, {2, 4}, {0, 3}}))
}
