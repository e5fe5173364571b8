package depcheck

import (
	"encoding/json"
	"errors"
	"io"
	"os"
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

// TestDependencyDirection enforces the arrows of docs/design.md.
func TestDependencyDirection(t *testing.T) {
	pkgs := listPackages(t)

	// Packages that may depend only on the standard library and the listed project packages
	// (transitively): the sandbox-side binary and the format stay small and portable.
	for name, p := range pkgs {
		var allowed func(r string) bool
		switch {
		case name == "internal/jsonlex" || name == "tape/harnesses":
			allowed = func(string) bool { return false }
		case name == "tape":
			allowed = func(r string) bool { return r == "internal/jsonlex" }
		case name == "tape/provider" || name == "tape/seal" || name == "executor/protocol":
			allowed = func(r string) bool { return r == "tape" || r == "internal/jsonlex" || r == "tape/harnesses" }
		case name == "executor" || strings.HasPrefix(name, "executor/") || name == "cmd/tapebox-exec":
			allowed = func(r string) bool {
				return r == "tape" || r == "internal/jsonlex" || r == "tape/harnesses" || r == "executor" || strings.HasPrefix(r, "executor/")
			}
		default:
			continue
		}
		for _, d := range p.Deps {
			if name != "tape/seal" && (d == "crypto/sha256" || d == "crypto/ed25519" || d == "crypto/rand") {
				t.Errorf("%s depends on %s: the executor links it, and crypto does not fit its budget (digests take it from tape/seal)", name, d)
			}
			if isStd(d) {
				continue
			}
			if r, own := rel(d); !own || !allowed(r) {
				t.Errorf("%s depends on %s: it may use the standard library only", name, d)
			}
		}
	}

	// workspace sits just above tape: the standard library, zstd and tape (whose manifest type
	// it fills), so that gateway, controller, sandbox and dataset can all use it without
	// importing each other.
	if p, ok := pkgs["workspace"]; !ok {
		t.Error("no workspace package")
	} else {
		for _, d := range p.Deps {
			if !isStd(d) && d != mod+"/tape" && d != mod+"/internal/jsonlex" && d != "github.com/klauspost/compress" && !strings.HasPrefix(d, "github.com/klauspost/compress/") {
				t.Errorf("workspace depends on %s: it may use the standard library, tape (with internal/jsonlex) and github.com/klauspost/compress only", d)
			}
		}
	}

	// secrets -> tape, and no other package of ours.
	if p, ok := pkgs["secrets"]; ok {
		for _, d := range p.Deps {
			if r, own := rel(d); own && r != "tape" && r != "internal/jsonlex" {
				t.Errorf("secrets depends on %s: it may use tape (with internal/jsonlex) only of this module", d)
			}
		}
	} else {
		t.Error("go list found no secrets package")
	}

	// Nothing imports cmd/...; only cmd/tapebox imports cli.
	// gateway, controller, dataset and schema do not import each other (but dataset -> schema).
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
			// docs/design.md's one exception: dataset validates rows with schema.
			if own && slices.Contains(sideways, name) && slices.Contains(sideways, r) && !(name == "dataset" && r == "schema") {
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
			// gitleaks brings viper, sprig and archive readers: only the secret scanner links
			// it, and only the command line links the scanner.
			if strings.HasPrefix(imp, "github.com/zricethezav/gitleaks/") && name != "secrets" {
				t.Errorf("%s imports %s: gitleaks lives only in secrets", name, imp)
			}
			if own && r == "secrets" && name != "cli" {
				t.Errorf("%s imports secrets: only cli may", name)
			}
			// the viewer is a page writer for the command line, not a library layer
			if own && r == "viewer" && name != "cli" {
				t.Errorf("%s imports viewer: only cli may", name)
			}
		}
	}
}

// TestExecutorSize builds the sandbox-side executor as `make executor` does, for both
// architectures, and holds it to its budget of 3 MiB.
func TestExecutorSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	const budget = 3 << 20
	for _, arch := range []string{"amd64", "arm64"} {
		out := t.TempDir() + "/tapebox-exec-" + arch
		cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-gcflags=all=-l", "-ldflags=-s -w", "-o", out, "./cmd/tapebox-exec")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", arch, err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("tapebox-exec-%s: %d bytes (budget %d)", arch, fi.Size(), budget)
		if fi.Size() > budget {
			t.Errorf("tapebox-exec-%s is %d bytes, over the %d-byte budget", arch, fi.Size(), budget)
		}
	}
}
