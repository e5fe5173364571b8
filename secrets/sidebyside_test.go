package secrets

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// Where TestRecallSideBySide plants a secret, besides the places of TestRecall.
const (
	inKey      place = "object-key" // a member name in a tool call's input
	inURL      place = "url"        // the password of a git remote's URL, in a tool result
	inSnapshot place = "snapshot"   // a file of the start snapshot (.env)
)

// sideBySidePlaces are the places a kind is planted in: every one for a token; the text
// places and the snapshot for a secret of several lines (a private key, a key pair) and
// for a password that is part of a URL.
func sideBySidePlaces(k secretKind) []place {
	if k.url || slices.Equal(k.places, textPlaces) {
		return []place{inRawBody, inToolResult, inToolInput, inSnapshot}
	}
	return []place{inHeader, inQuery, inRawBody, inToolResult, inToolInput, inKey, inURL, inSnapshot}
}

// sidePlanting is one secret planted in one tape (and its snapshot).
type sidePlanting struct {
	kind    string
	place   place
	secret  string // the first secret of the kind: the one looked for
	file    string
	pointer string
	member  string
	// corpusText is what the other tools scan: the tape file's bytes, or the snapshot
	// file's content (as a scan of the extracted workspace sees it).
	corpusText string
}

// TestRecallSideBySide plants every kind of secretKinds and moreKinds (at least 40) at
// each of its places (headers, query strings, raw bodies, tool results and inputs, object
// keys, URLs, snapshot files) and measures, on the same corpus, the recall of this
// package's scan (ScanFile, snapshot included), of gitleaks' default rules on their own
// (the stock detector on the tape file's bytes and the snapshot's files) and of the
// TruffleHog detectors' expressions (trufflehogDetectors, on the same bytes). It prints
// the table (go test -run TestRecallSideBySide -v ./secrets) and requires our recall to
// be at least 99% and at least each of the others'.
func TestRecallSideBySide(t *testing.T) {
	kinds := append(slices.Clone(secretKinds), moreKinds...)
	require.GreaterOrEqual(t, len(kinds), 40)
	r := rand.New(rand.NewPCG(30, 8))
	dir := t.TempDir()
	var plants []sidePlanting
	for _, k := range kinds {
		for _, pl := range sideBySidePlaces(k) {
			plants = append(plants, plantSide(t, r, dir, len(plants), k, pl))
		}
	}

	s, err := Default()
	require.NoError(t, err)
	stock, err := gitleaksConfig()
	require.NoError(t, err)
	gl := detect.NewDetector(stock)
	gl.MaxDecodeDepth = maxDecodeDepth

	type tally struct{ ours, gitleaks, trufflehog, planted int }
	byKind, byPlace := map[string]*tally{}, map[place]*tally{}
	var total tally
	for _, p := range plants {
		found, err := s.ScanFile(t.Context(), p.file)
		require.NoError(t, err, p.file)
		ours := slices.ContainsFunc(found, func(f Finding) bool {
			return f.Pointer == p.pointer && f.Member == p.member && f.Preview == preview(p.secret)
		})
		if !ours {
			t.Logf("ours missed %s at %s %s", p.kind, p.place, p.pointer)
		}
		forms := secretForms(p.secret)
		glFound := slices.ContainsFunc(gl.DetectString(p.corpusText), func(f report.Finding) bool {
			return holds(f.Secret, forms) || holds(f.Match, forms)
		})
		thFound := trufflehogFinds(p.corpusText, p.secret)
		if byKind[p.kind] == nil {
			byKind[p.kind] = &tally{}
		}
		if byPlace[p.place] == nil {
			byPlace[p.place] = &tally{}
		}
		for _, tl := range []*tally{byKind[p.kind], byPlace[p.place], &total} {
			tl.planted++
			tl.ours += b2i(ours)
			tl.gitleaks += b2i(glFound)
			tl.trufflehog += b2i(thFound)
		}
	}
	pct := func(n, of int) string { return fmt.Sprintf("%5.1f%%", 100*float64(n)/float64(of)) }
	var b strings.Builder
	fmt.Fprintf(&b, "side-by-side recall, %d kinds, %d plantings; ours = tapebox scan (%s + %s), gitleaks = its default rules alone, trufflehog = its detectors' expressions at %s\n",
		len(kinds), len(plants), RuleSet(), URLCredentialsRule, trufflehogCommit)
	fmt.Fprintf(&b, "  %-20s %7s %7s %7s %10s\n", "kind", "planted", "ours", "gitleaks", "trufflehog")
	for _, k := range kinds {
		tl := byKind[k.name]
		fmt.Fprintf(&b, "  %-20s %7d %7s %7s %10s\n", k.name, tl.planted, pct(tl.ours, tl.planted), pct(tl.gitleaks, tl.planted), pct(tl.trufflehog, tl.planted))
	}
	fmt.Fprintf(&b, "  %-20s %7s %7s %7s %10s\n", "place", "planted", "ours", "gitleaks", "trufflehog")
	for _, pl := range []place{inHeader, inQuery, inRawBody, inToolResult, inToolInput, inKey, inURL, inSnapshot} {
		tl := byPlace[pl]
		fmt.Fprintf(&b, "  %-20s %7d %7s %7s %10s\n", pl, tl.planted, pct(tl.ours, tl.planted), pct(tl.gitleaks, tl.planted), pct(tl.trufflehog, tl.planted))
	}
	fmt.Fprintf(&b, "  %-20s %7d %7s %7s %10s", "total", total.planted, pct(total.ours, total.planted), pct(total.gitleaks, total.planted), pct(total.trufflehog, total.planted))
	t.Log(b.String())
	if float64(total.ours) < 0.99*float64(total.planted) {
		t.Errorf("our recall %s, want at least 99%%", pct(total.ours, total.planted))
	}
	if total.ours < total.gitleaks || total.ours < total.trufflehog {
		t.Errorf("our recall %d/%d is below gitleaks' %d or TruffleHog's %d", total.ours, total.planted, total.gitleaks, total.trufflehog)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// plantSide writes a tape (and for inSnapshot its start snapshot) holding one planting
// of kind k at pl, in a directory of its own under dir.
func plantSide(t *testing.T, r *rand.Rand, dir string, n int, k secretKind, pl place) sidePlanting {
	t.Helper()
	secrets := k.gen(r)
	p := sidePlanting{kind: k.name, place: pl, secret: secrets[0]}
	sub := filepath.Join(dir, fmt.Sprintf("%03d-%s-%s", n, k.name, pl))
	require.NoError(t, os.Mkdir(sub, 0o755))
	p.file = filepath.Join(sub, "tape.json")
	tp := smallTape()
	s := tp.Threads[0].Steps[0]
	at := "/threads/0/steps/0"
	header := k.header
	if header == "" {
		header = "x-" + k.name + "-token"
	}
	param := k.param
	if param == "" {
		param = "token"
	}
	switch pl {
	case inHeader:
		v := secrets[0]
		if k.headerValue != nil {
			v = k.headerValue(v)
		}
		s.Request.Headers[header] = v
		p.pointer = at + "/request/headers/" + escapePointer(header)
	case inQuery:
		s.Request.Path += "?" + param + "=" + secrets[0] + "&alt=sse"
		p.pointer = at + "/request/path"
	case inRawBody:
		s.Request.Raw = rawWithText("Use this:\n" + k.line(secrets) + "\n")
		p.pointer = at + "/request/raw/messages/0/content/0/text"
	case inToolResult:
		s.ToolResults[0].Content[0].Text = "$ cat .env\n" + k.line(secrets) + "\n"
		p.pointer = at + "/tool_results/0/content/0/text"
	case inToolInput:
		in, err := json.Marshal(map[string]string{"command": "cat >> .env <<'EOF'\n" + k.line(secrets) + "\nEOF"})
		require.NoError(t, err)
		s.ToolCalls[0].Input = in
		p.pointer = at + "/tool_calls/0/input/command"
	case inKey:
		in, err := json.Marshal(map[string]any{"tokens": map[string]any{secrets[0]: map[string]string{"scope": "repo"}}})
		require.NoError(t, err)
		s.ToolCalls[0].Input = in
		p.pointer = at + "/tool_calls/0/input/tokens/" + escapePointer(secrets[0])
	case inURL:
		s.ToolResults[0].Content[0].Text = "$ git remote -v\norigin\thttps://ci:" + secrets[0] + "@github.com/acme/app.git (fetch)\n"
		p.pointer = at + "/tool_results/0/content/0/text"
	case inSnapshot:
		ws := filepath.Join(sub, "ws")
		require.NoError(t, os.Mkdir(ws, 0o755))
		env := "# local settings\n" + k.line(secrets) + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(ws, ".env"), []byte(env), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644))
		snap := filepath.Join(sub, "tape.workspace.tar.zst")
		info, err := workspace.SnapshotFile(t.Context(), ws, snap, workspace.Options{})
		require.NoError(t, err)
		tp.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(snap), Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes}
		p.pointer, p.member, p.corpusText = SnapshotPointer, ".env", env
	}
	require.NoError(t, tape.Save(p.file, tp))
	if p.corpusText == "" {
		data, err := os.ReadFile(p.file)
		require.NoError(t, err)
		p.corpusText = string(data)
	}
	return p
}
