package term_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tapebox/tapebox/internal/term"
)

// TestExcerptEscapesTerminal: a report prints a tape's text with its control characters
// escaped, so a recorded result cannot retitle or clear the terminal that shows it.
func TestExcerptEscapesTerminal(t *testing.T) {
	assert.Equal(t, `\x1b]0;owned\x07 ok\n\x1b[2J`, term.Excerpt("\x1b]0;owned\a ok\n\x1b[2J", 100))
	assert.Equal(t, `ab…`, term.Excerpt("abc", 2))
}
