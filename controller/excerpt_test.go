package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tapebox/tapebox/controller"
)

// TestExcerptEscapesTerminal: a report prints a tape's text with its control characters
// escaped, so a recorded result cannot retitle or clear the terminal that shows it.
func TestExcerptEscapesTerminal(t *testing.T) {
	assert.Equal(t, `\x1b]0;owned\x07 ok\n\x1b[2J`, controller.Excerpt("\x1b]0;owned\a ok\n\x1b[2J", 100))
	assert.Equal(t, `ab…`, controller.Excerpt("abc", 2))
}
