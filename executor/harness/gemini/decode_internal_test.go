package gemini

import (
	"testing"
)

// TestLocaleLess pins the order of list_directory's names: punctuation, digits, Latin
// letters case-insensitively with accented letters beside their base letter, other
// scripts last; lower case before upper case when otherwise equal.
func TestLocaleLess(t *testing.T) {
	want := []string{"_x", "1.txt", "a.txt", "B.txt", "delta.go", "é-notes.go", "end.txt", "Zed", "Ω-data.go", "שלום"}
	for i := range want {
		for j := range want {
			if got := localeLess(want[i], want[j]); got != (i < j) {
				t.Errorf("localeLess(%q, %q) = %v", want[i], want[j], got)
			}
		}
	}
	if !localeLess("readme", "README") {
		t.Error("lower case first")
	}
}
