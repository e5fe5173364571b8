package kit

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
