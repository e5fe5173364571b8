package depcheck

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

const designPath = "../../docs/design.md"

// entry is one line of docs/design.md's dependency table: a package of this module, the
// packages of this module it imports (its code, not its tests), and what it is for.
type entry struct {
	name    string
	deps    []string
	comment []string // the text after the arrows, and its continuation lines
}

// table is docs/design.md's dependency table with the lines around it.
type table struct {
	before, after []string // the page's lines outside the table block
	floors        []string // each floor's heading line ("# ..."), in order
	entries       []entry  // top to bottom
	floorOf       []int    // floorOf[i] is the index in floors of entries[i]'s floor
}

// readTable parses the first code block after the heading "## Packages and the dependency
// direction": floor headings ("# name: what"), then lines "PKG -> DEP, DEP  (comment)" ("-"
// for no dependency), a comment continued on lines that start with spaces.
func readTable(t *testing.T) table {
	t.Helper()
	data, err := os.ReadFile(designPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	head := slices.Index(lines, "## Packages and the dependency direction")
	if head < 0 {
		t.Fatalf("%s: no heading \"## Packages and the dependency direction\"", designPath)
	}
	open := -1
	for i := head; i < len(lines); i++ {
		if lines[i] == "```" {
			open = i
			break
		}
	}
	end := -1
	for i := open + 1; open >= 0 && i < len(lines); i++ {
		if lines[i] == "```" {
			end = i
			break
		}
	}
	if end < 0 {
		t.Fatalf("%s: no code block under the heading", designPath)
	}
	tb := table{before: lines[:open+1], after: lines[end:]}
	for n, line := range lines[open+1 : end] {
		where := fmt.Sprintf("%s:%d", designPath, open+2+n)
		switch {
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "# "):
			tb.floors = append(tb.floors, line)
		case strings.HasPrefix(line, " "):
			if len(tb.entries) == 0 {
				t.Fatalf("%s: a continuation line before any package", where)
			}
			e := &tb.entries[len(tb.entries)-1]
			if len(e.comment) == 0 && len(e.deps) > 0 && strings.HasSuffix(e.deps[len(e.deps)-1], ",") {
				// The arrows go on: "DEP, DEP," then "DEP  (comment)".
				e.deps[len(e.deps)-1] = strings.TrimSuffix(e.deps[len(e.deps)-1], ",")
				e.parse(line)
				continue
			}
			e.comment = append(e.comment, strings.TrimSpace(line))
		default:
			name, rest, ok := strings.Cut(line, "->")
			if !ok || len(tb.floors) == 0 {
				t.Fatalf("%s: want \"PKG -> DEP, DEP  (comment)\" under a \"# floor\" heading, got %q", where, line)
			}
			e := entry{name: strings.TrimSpace(name)}
			e.parse(rest)
			tb.entries = append(tb.entries, e)
			tb.floorOf = append(tb.floorOf, len(tb.floors)-1)
		}
	}
	return tb
}

// parse reads "DEP, DEP  (comment)" into e: "-" is no dependency, and a list that ends
// with a comma goes on on the next line.
func (e *entry) parse(text string) {
	deps, comment, _ := strings.Cut(text, "(")
	if comment != "" {
		e.comment = []string{"(" + comment}
	}
	d := strings.TrimSpace(deps)
	if d == "-" {
		return
	}
	for dep := range strings.SplitSeq(d, ",") {
		if dep = strings.TrimSpace(dep); dep != "" {
			e.deps = append(e.deps, dep)
		}
	}
	if strings.HasSuffix(d, ",") {
		e.deps[len(e.deps)-1] += ","
	}
}

// depLines are the arrows of an entry as lines of at most about 60 characters, each but
// the last ending with a comma.
func (e entry) depLines() []string {
	if len(e.deps) == 0 {
		return []string{"-"}
	}
	var lines []string
	line := ""
	for i, d := range e.deps {
		if line != "" && len(line)+len(d) > 60 {
			lines = append(lines, line+",")
			line = ""
		}
		if line != "" {
			line += ", "
		}
		line += d
		if i == len(e.deps)-1 {
			lines = append(lines, line)
		}
	}
	return lines
}

// write puts the table back into docs/design.md, each package's arrows as given.
func (tb table) write(t *testing.T) {
	t.Helper()
	width := 0
	for _, e := range tb.entries {
		width = max(width, len(e.name))
	}
	out := slices.Clone(tb.before)
	floor := -1
	for i, e := range tb.entries {
		if tb.floorOf[i] != floor {
			if floor >= 0 {
				out = append(out, "")
			}
			floor = tb.floorOf[i]
			out = append(out, tb.floors[floor])
		}
		deps := e.depLines()
		for j, d := range deps {
			if j == 0 {
				deps[j] = fmt.Sprintf("%-*s -> %s", width, e.name, d)
			} else {
				deps[j] = strings.Repeat(" ", width+4) + d
			}
		}
		for j, c := range e.comment {
			if j == 0 {
				deps[len(deps)-1] += "  " + c
			} else {
				deps = append(deps, strings.Repeat(" ", width+4)+c)
			}
		}
		out = append(out, deps...)
	}
	out = append(out, tb.after...)
	if err := os.WriteFile(designPath, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDesignTable holds docs/design.md's dependency table to go list: every package of the
// module with code is a line of it, each line's arrows are exactly the module's packages that
// code imports, and every arrow points down the table, to a package on a lower line (a floor
// heading groups lines). The table is the per-package allowlist: a new import is a change to
// the page, reviewed with the code.
//
// With TAPEBOX_UPDATE=1 the arrows of the packages already listed are rewritten from go list;
// the order, the floors and the comments stay the author's, so a new package still has to be
// placed by hand and an import that runs up a floor still fails.
func TestDesignTable(t *testing.T) {
	actual := importsByPackage(listPackages(t))
	tb := readTable(t)
	if os.Getenv("TAPEBOX_UPDATE") == "1" {
		for i := range tb.entries {
			if deps, ok := actual[tb.entries[i].name]; ok {
				tb.entries[i].deps = deps
			}
		}
		tb.write(t)
		tb = readTable(t)
	}
	for _, p := range tb.check(actual) {
		t.Errorf("%s: %s", designPath, p)
	}
}

// TestDesignTableCatches shows that the check says "differs" on planted differences: an arrow
// the code does not have, an import the table lacks, an arrow that runs up, a package missing.
func TestDesignTableCatches(t *testing.T) {
	actual := importsByPackage(listPackages(t))
	clean := readTable(t)
	if p := clean.check(actual); len(p) > 0 {
		t.Skipf("the table does not hold as it is (TestDesignTable says why): %v", p)
	}
	row := func(tb table, name string) int {
		i := slices.IndexFunc(tb.entries, func(e entry) bool { return e.name == name })
		if i < 0 {
			t.Fatalf("no %s in the table", name)
		}
		return i
	}
	plant := func(change func(tb *table)) []string {
		tb := clean
		tb.entries = slices.Clone(clean.entries)
		tb.floorOf = slices.Clone(clean.floorOf)
		for i := range tb.entries {
			tb.entries[i].deps = slices.Clone(tb.entries[i].deps)
		}
		change(&tb)
		return tb.check(actual)
	}
	for name, tc := range map[string]struct {
		change func(tb *table)
		want   string
	}{
		"arrow the code lacks": {func(tb *table) {
			e := &tb.entries[row(*tb, "workspace")]
			e.deps = append(e.deps, "internal/jsonlex")
		}, "workspace -> "},
		"import the table lacks": {func(tb *table) {
			e := &tb.entries[row(*tb, "cli")]
			e.deps = slices.DeleteFunc(e.deps, func(d string) bool { return d == "tape" })
		}, "go list says it imports"},
		"arrow that runs up": {func(tb *table) {
			i, j := row(*tb, "tape"), row(*tb, "workspace")
			tb.entries[i], tb.entries[j] = tb.entries[j], tb.entries[i]
		}, "runs up"},
		"package missing": {func(tb *table) {
			tb.entries = slices.Delete(tb.entries, row(*tb, "prices"), row(*tb, "prices")+1)
			tb.floorOf = tb.floorOf[:len(tb.entries)]
		}, "prices is not in the table"},
	} {
		problems := plant(tc.change)
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("%s: the check did not say %q; it said %q", name, tc.want, problems)
		}
	}
}

// importsByPackage maps each package of the module that has code to the module's packages
// that code imports, sorted.
func importsByPackage(pkgs map[string]pkg) map[string][]string {
	actual := map[string][]string{}
	for name, p := range pkgs {
		if name == "" || len(p.GoFiles) == 0 {
			continue // tests only (test/e2e, executor/conformance, benchmarks): not a floor of the product
		}
		deps := []string{}
		for _, imp := range p.Imports {
			if r, own := rel(imp); own {
				deps = append(deps, r)
			}
		}
		slices.Sort(deps)
		actual[name] = deps
	}
	return actual
}

// check lists where the table and go list's imports (actual) part.
func (tb table) check(actual map[string][]string) []string {
	var problems []string
	row := map[string]int{}
	for i, e := range tb.entries {
		if _, dup := row[e.name]; dup {
			problems = append(problems, e.name+" is listed twice")
		}
		row[e.name] = i
	}
	for _, name := range slices.Sorted(maps.Keys(actual)) {
		if _, ok := row[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s is not in the table: add a line \"%s -> %s\" on its floor, above everything it imports",
				name, name, strings.Join(actual[name], ", ")))
		}
	}
	for i, e := range tb.entries {
		deps, ok := actual[e.name]
		if !ok {
			problems = append(problems, e.name+" is in the table, but go list has no such package with code")
			continue
		}
		if got := slices.Sorted(slices.Values(e.deps)); !slices.Equal(got, deps) {
			problems = append(problems, fmt.Sprintf("%s -> %s, but go list says it imports %s (TAPEBOX_UPDATE=1 go test ./test/depcheck -run TestDesignTable rewrites the arrows)",
				e.name, strings.Join(got, ", "), strings.Join(deps, ", ")))
		}
		for _, d := range e.deps {
			switch j, ok := row[d]; {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s -> %s: %s is not in the table", e.name, d, d))
			case j <= i:
				problems = append(problems, fmt.Sprintf("%s -> %s runs up: %s is listed above %s (%s)", e.name, d, d, e.name, tb.floors[tb.floorOf[j]]))
			}
		}
	}
	return problems
}
