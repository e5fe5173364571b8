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
// reported at the member's pointer, with Key set.
func TestMemberNames(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	gh := fake(t, "github-pat", 30)
	doc := `{"meta":{"labels":{"` + gh + `":"1"}},"env":{"a/b":{"tok":"x"}}}`
	got, err := s.ScanJSON(t.Context(), strings.NewReader(doc))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Finding{Pointer: "/meta/labels/" + gh, Rule: "github-pat", Preview: "ghp_…", Secret: 1, Length: len(gh), Key: true}, got[0])
	assert.Equal(t, "/meta/labels/"+gh+" (member name): github-pat: ghp_…", got[0].String())
}
