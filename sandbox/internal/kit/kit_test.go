package kit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tapebox/tapebox/workspace"
)

func TestTail(t *testing.T) {
	tb := NewTail(8)
	tb.Write([]byte("abc"))
	tb.Write([]byte("defgh"))
	assert.Equal(t, "abcdefgh", tb.String())
	tb.Write([]byte("ij"))
	assert.Equal(t, "cdefghij", tb.String())
	tb.Write([]byte("0123456789"))
	assert.Equal(t, "23456789", tb.String())
}

func TestOwnerOf(t *testing.T) {
	for user, want := range map[string]struct {
		owner  workspace.Owner
		byName bool
	}{
		"": {}, "root": {}, "0": {}, "0:0": {},
		"1234":       {owner: workspace.Owner{UID: 1234}},
		"1234:5678":  {owner: workspace.Owner{UID: 1234, GID: 5678}},
		"root:staff": {byName: true},
		"node":       {byName: true},
		"1000:users": {byName: true},
		"-1":         {byName: true},
	} {
		owner, byName := OwnerOf(user)
		assert.Equal(t, want.owner, owner, user)
		assert.Equal(t, want.byName, byName, user)
	}
}
