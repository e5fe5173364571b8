package harnesses

import (
	"strconv"
	"strings"
)

// Has says whether version of the harness has behaviour (a key of Since): true when the
// version is at least the one Since names, or unknown (""), or the behaviour is not in
// Since.
func (h *Harness) Has(version, behaviour string) bool {
	since, ok := h.Since[behaviour]
	if !ok || version == "" {
		return true
	}
	return CompareVersions(version, since) >= 0
}

// Nearest returns the checked version (Checked) nearest to version: the newest one not
// newer than it, or the oldest when version is older than all; "" when none is checked.
// exact says version is one of them.
func (h *Harness) Nearest(version string) (nearest string, exact bool) {
	for _, c := range h.Checked {
		cmp := CompareVersions(c, version)
		if cmp == 0 {
			return c, true
		}
		if cmp < 0 || nearest == "" {
			nearest = c
		}
	}
	return nearest, false
}

// CompareVersions compares two dotted versions ("0.161.0", "2.1.332") field by field,
// numerically where both fields are numbers; a pre-release or build suffix after "-" or
// "+" is compared as text after the numbers. It returns -1, 0 or 1.
func CompareVersions(a, b string) int {
	an, as, _ := strings.Cut(strings.TrimPrefix(a, "v"), "-")
	bn, bs, _ := strings.Cut(strings.TrimPrefix(b, "v"), "-")
	af, bf := strings.Split(an, "."), strings.Split(bn, ".")
	for i := 0; i < max(len(af), len(bf)); i++ {
		x, y := "0", "0"
		if i < len(af) {
			x = af[i]
		}
		if i < len(bf) {
			y = bf[i]
		}
		xi, xerr := strconv.Atoi(x)
		yi, yerr := strconv.Atoi(y)
		switch {
		case xerr == nil && yerr == nil && xi != yi:
			if xi < yi {
				return -1
			}
			return 1
		case (xerr != nil || yerr != nil) && x != y:
			return strings.Compare(x, y)
		}
	}
	switch {
	case as == bs:
		return 0
	case as == "": // a release sorts after its pre-releases
		return 1
	case bs == "":
		return -1
	}
	return strings.Compare(as, bs)
}
