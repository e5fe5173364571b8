package depcheck

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/tapebox/tapebox"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json", mod+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func rel(path string) (string, bool) {
	if path == mod {
		return "", true
	}
	if r, ok := strings.CutPrefix(path, mod+"/"); ok {
		return r, true
	}
	return "", false
}

// TestDependencyDirection enforces the arrows of DESIGN.md.
func TestDependencyDirection(t *testing.T) {
	pkgs := listPackages(t)

	// Packages that may depend only on the standard library and the listed project packages
	// (transitively): the sandbox-side binary and the format stay small and portable.
	for name, p := range pkgs {
		var allowed func(r string) bool
		switch {
		case name == "tape":
			allowed = func(string) bool { return false }
		case name == "tape/provider" || name == "executor/protocol":
			allowed = func(r string) bool { return r == "tape" }
		case name == "executor" || strings.HasPrefix(name, "executor/") || name == "cmd/tapebox-exec":
			allowed = func(r string) bool { return r == "tape" || r == "executor" || strings.HasPrefix(r, "executor/") }
		default:
			continue
		}
		for _, d := range p.Deps {
			if isStd(d) {
				continue
			}
			if r, own := rel(d); !own || !allowed(r) {
				t.Errorf("%s depends on %s: it may use the standard library only", name, d)
			}
		}
	}

	// Nothing imports cmd/...; only cmd/tapebox imports cli.
	// gateway, controller, dataset and schema do not import each other.
	sideways := []string{"gateway", "controller", "dataset", "schema"}
	heavy := []string{"github.com/apache/arrow-go", "github.com/parquet-go/parquet-go"}
	for name, p := range pkgs {
		for _, imp := range p.Imports {
			r, own := rel(imp)
			if own && strings.HasPrefix(r, "cmd/") {
				t.Errorf("%s imports %s: nothing may import a command", name, imp)
			}
			if own && r == "cli" && name != "cmd/tapebox" {
				t.Errorf("%s imports cli: only cmd/tapebox may", name)
			}
			if own && slices.Contains(sideways, name) && slices.Contains(sideways, r) {
				t.Errorf("%s imports %s: %v must not import each other", name, r, sideways)
			}
			if imp == "testing" && name != "testkit" && !strings.HasSuffix(name, "test") && !strings.Contains(name, "internal/") {
				t.Errorf("%s imports testing: only testkit (and internal test helpers) may", name)
			}
			for _, h := range heavy {
				if strings.HasPrefix(imp, h) && name != "dataset" && !strings.HasPrefix(name, "dataset/") {
					t.Errorf("%s imports %s: Arrow and Parquet live only in dataset", name, imp)
				}
			}
			if strings.HasPrefix(imp, "github.com/docker/") && name != "sandbox" && !strings.HasPrefix(name, "sandbox/") && !strings.HasPrefix(name, "internal/") {
				t.Errorf("%s imports %s: the Docker client lives in sandbox", name, imp)
			}
		}
	}
}
