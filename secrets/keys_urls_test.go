package secrets

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestURLCredentials: issue 30 found that passwords in URLs were missed (a connection
// string, a git remote with a token); placeholders are not findings.
func TestURLCredentials(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	pw := fake(t, "password", 30)
	tests := []struct {
		text, secret string // secret "" means no finding
	}{
		{"DATABASE_URL=postgres://user:pw@host/db", "pw"},
		{"connect postgresql://app:" + pw + "@db.internal:5432/prod?sslmode=require", pw},
		{"origin\thttps://deploy:" + pw + "@github.com/acme/app.git (fetch)", pw},
		{"redis://:" + pw + "@cache:6379/0", pw},
		{"amqp://guest:" + pw + "@[::1]:5672/", pw},
		{"see postgres://user:password@localhost/db in the docs", ""},
		{"postgres://app:${DB_PASSWORD}@db/prod", ""},
		{"postgres://app:<password>@db/prod", ""},
		{"https://" + "github.com/acme/app.git", ""},
		{"mailto:someone@example.com and user:pw@host without a scheme", ""},
	}
	for _, tt := range tests {
		doc, err := json.Marshal(map[string]string{"text": tt.text})
		require.NoError(t, err)
		got, err := s.ScanJSON(t.Context(), strings.NewReader(string(doc)))
		require.NoError(t, err)
		if tt.secret == "" {
			assert.Empty(t, got, tt.text)
			continue
		}
		require.Len(t, got, 1, tt.text)
		assert.Equal(t, URLCredentialsRule, got[0].Rule)
		assert.Equal(t, tt.secret, tt.text[got[0].Offset:got[0].Offset+got[0].Length], tt.text)
	}
	assert.Contains(t, ExtraRules(), URLCredentialsRule)
}

// TestMemberNames: issue 30 found that member names were not scanned; a key in one is
// reported at the member's pointer, with Key set, and printed masked.
func TestMemberNames(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	gh := fake(t, "github-pat", 30)
	doc := `{"meta":{"labels":{"` + gh + `":"1"}},"env":{"a/b":{"tok":"x"}}}`
	got, err := s.ScanJSON(t.Context(), strings.NewReader(doc))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Finding{Pointer: "/meta/labels/" + gh, Rule: "github-pat", Preview: "ghp_…", Secret: 1, Length: len(gh), Key: true}, got[0])
	assert.Equal(t, "/meta/labels/ghp_… (member name): github-pat: ghp_…", got[0].String(), "the pointer would spell the secret out")
}

// TestMasked: a secret that names a member or a snapshot file is masked in every place
// that spells it out: its own finding's and those of the places under it.
func TestMasked(t *testing.T) {
	key := "gh" + "p_" + strings.Repeat("Q", 36)
	fs := []Finding{
		{Pointer: "/meta/labels/x-" + key, Key: true, Offset: 2, Length: len(key), Rule: "github-pat"},
		{Pointer: "/meta/labels/x-" + key + "/0", Offset: 0, Length: 3, Rule: "other"},
		{Pointer: SnapshotPointer, Member: "d-" + key + "/", In: InName, Offset: 2, Length: len(key)},
		{Pointer: SnapshotPointer, Member: "d-" + key + "/f", Offset: 10, Length: 5},
		{Pointer: "/threads/0", Offset: 0, Length: 4},
	}
	got := Masked(fs)
	require.Len(t, got, len(fs))
	for i, f := range got {
		assert.NotContains(t, f.Pointer+f.Member+f.String(), key, i)
	}
	assert.Equal(t, "/meta/labels/x-ghp_…/0", got[1].Pointer)
	assert.Equal(t, "d-ghp_…/f", got[3].Member)
	assert.Equal(t, fs[4], got[4])
	assert.Contains(t, fs[0].Pointer, key, "Masked copies: the findings given stay as they were")
}

// TestClassOf: the switch of classOf says what the allowlist's map says.
func TestClassOf(t *testing.T) {
	for name, c := range fields {
		assert.Equal(t, c, classOf(name), name)
	}
	for _, name := range []string{"", "text", "Id", "ids", "signatures", "content", "x-request-ids"} {
		assert.Equal(t, scanAll, classOf(name), name)
	}
}
