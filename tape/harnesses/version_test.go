package harnesses

import "testing"

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0.161.0", "0.162.0", -1}, {"0.171.0", "0.162.0", 1}, {"0.162.0", "0.162.0", 0},
		{"0.99.0", "0.100.0", -1}, {"2.1.332", "2.0.77", 1}, {"1.2", "1.2.0", 0},
		{"0.162.0-alpha.1", "0.162.0", -1}, {"v0.1.0", "0.1.0", 0}, {"0.1.x", "0.1.y", -1},
	}
	for _, tt := range tests {
		if got := CompareVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := CompareVersions(tt.b, tt.a); got != -tt.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestHasAndNearest(t *testing.T) {
	h := Codex
	for v, want := range map[string]bool{"": true, "0.161.0": false, "0.162.0": true, "0.171.0": true, "0.50.0": false, "9.0.0": true} {
		if got := h.Has(v, CodexPatchKeepsLineEnds); got != want {
			t.Errorf("Has(%q) = %v, want %v", v, got, want)
		}
	}
	if !h.Has("0.1.0", "no such behaviour") {
		t.Error("a behaviour not in Since is had by every version")
	}
	for v, want := range map[string]string{"0.161.0": "0.161.0", "0.165.0": "0.161.0", "0.171.0": "0.171.0", "0.180.0": "0.171.0", "0.1.0": "0.161.0"} {
		got, exact := h.Nearest(v)
		if got != want || exact != (v == want) {
			t.Errorf("Nearest(%q) = %q, %v; want %q", v, got, exact, want)
		}
	}
}
