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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// scanWith scans the tape file at path on n workers (the calling goroutine holding one):
// n = 1 is the serial scan, the whole document walked on one goroutine and the snapshot
// read and scanned on it.
func scanWith(t *testing.T, path string, n int) ([]Finding, error) {
	t.Helper()
	return scanWithMemo(t, path, n, true)
}

// reference is the scan the others must agree with: serial, every container walked (no
// container memo).
func reference(t *testing.T, path string) ([]Finding, error) {
	t.Helper()
	return scanWithMemo(t, path, 1, false)
}

func scanWithMemo(t *testing.T, path string, n int, containers bool) ([]Finding, error) {
	t.Helper()
	defer func(on bool) { containersOn = on }(containersOn)
	containersOn = containers
	s, err := Default()
	require.NoError(t, err)
	wk := &workers{tokens: make(chan struct{}, n)}
	wk.acquire()
	defer wk.release()
	return s.ScanFileWith(t.Context(), path, Options{workers: wk})
}

// planted is a secret planted by plantEverywhere, where it is expected.
type planted struct {
	kind, secret, pointer, member string
}

// plantEverywhere writes, in dir, a large generated tape (several MB, split into many
// parts) holding every kind of secretKinds and moreKinds at a place of its own among the
// steps (headers, query strings, raw bodies, tool results and inputs, object keys, URLs,
// meta labels), and a start snapshot holding every kind again: in a .env, in many small
// files, in a text file of more than one chunk (a key across the chunks' boundary), in a
// binary file, in entry names and in a link's target.
// With lean, the snapshot has neither the large log nor the binary file.
func plantEverywhere(t *testing.T, dir string, seed uint64, lean bool) (string, []planted) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 30))
	kinds := append(slices.Clone(secretKinds), moreKinds...)
	type spot struct{ thread, step int }
	var spots []spot
	var tp *tape.Tape
	for i := 0; len(spots) < len(kinds); i++ { // the first tape of the seed with a step for each kind
		require.Less(t, i, 50, "no tape with enough steps")
		tp, spots = tapegen.Tape(tapegen.Options{Seed: seed, MeanSteps: 40}, i), nil
		for ti, th := range tp.Threads {
			for si, s := range th.Steps {
				if len(s.ToolResults) > 0 && len(s.ToolResults[0].Content) > 0 && s.ToolResults[0].Content[0].Type == tape.BlockText && len(s.ToolCalls) > 0 {
					spots = append(spots, spot{ti, si})
				}
			}
		}
	}
	var plants []planted
	places := []place{inHeader, inQuery, inRawBody, inToolResult, inToolInput, inKey, inURL}
	for i, k := range kinds {
		secrets := k.gen(r)
		sp := spots[(i*len(spots))/len(kinds)]
		s := tp.Threads[sp.thread].Steps[sp.step]
		at := fmt.Sprintf("/threads/%d/steps/%d", sp.thread, sp.step)
		pl := places[i%len(places)]
		if k.url || slices.Equal(k.places, textPlaces) {
			pl = textPlaces[i%len(textPlaces)]
		}
		p := planted{kind: k.name, secret: secrets[0]}
		switch pl {
		case inHeader:
			h := k.header
			if h == "" {
				h = "x-" + k.name + "-token"
			}
			v := secrets[0]
			if k.headerValue != nil {
				v = k.headerValue(v)
			}
			if s.Request.Headers == nil {
				s.Request.Headers = tape.Headers{}
			}
			s.Request.Headers[h] = v
			p.pointer = at + "/request/headers/" + escapePointer(h)
		case inQuery:
			param := k.param
			if param == "" {
				param = "token"
			}
			s.Request.Path += "?" + param + "=" + secrets[0] + "&alt=sse"
			p.pointer = at + "/request/path"
		case inRawBody:
			var ptr string
			s.Request.Raw, ptr = appendToLongest(t, s.Request.Raw, "\n\nUse this: "+k.line(secrets)+"\n", "/messages/", "/input/")
			p.pointer = at + "/request/raw" + ptr
			// The same body again in the next step, as the next request carries the
			// conversation: found there too, from the container memo.
			if steps := tp.Threads[sp.thread].Steps; sp.step+1 < len(steps) {
				steps[sp.step+1].Request.Raw = slices.Clone(s.Request.Raw)
				plants = append(plants, planted{kind: k.name, secret: secrets[0],
					pointer: fmt.Sprintf("/threads/%d/steps/%d/request/raw%s", sp.thread, sp.step+1, ptr)})
			}
		case inToolResult:
			s.ToolResults[0].Content[0].Text += "\n$ cat .env\n" + k.line(secrets) + "\n"
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
			s.ToolResults[0].Content[0].Text += "\n$ git remote -v\norigin\thttps://ci:" + secrets[0] + "@github.com/acme/app.git (fetch)\n"
			p.pointer = at + "/tool_results/0/content/0/text"
		}
		plants = append(plants, p)
	}
	// One in meta, before the threads.
	gh := kindNamed(t, "github-pat").gen(r)[0]
	tp.Meta.Labels = map[string]string{"deploy": "GITHUB_TOKEN=" + gh}
	plants = append(plants, planted{kind: "github-pat", secret: gh, pointer: "/meta/labels/deploy"})

	// The snapshot.
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "many"), 0o755))
	var env strings.Builder
	env.WriteString("# local settings\n")
	for i, k := range kinds {
		secrets := k.gen(r)
		line := k.line(secrets) + "\n"
		env.WriteString(line)
		plants = append(plants, planted{kind: k.name, secret: secrets[0], pointer: SnapshotPointer, member: ".env"})
		// And each in a small file of its own.
		name := fmt.Sprintf("many/f%03d.txt", i)
		require.NoError(t, os.WriteFile(filepath.Join(ws, filepath.FromSlash(name)), []byte("notes\n"+line), 0o644))
		plants = append(plants, planted{kind: k.name, secret: secrets[0], pointer: SnapshotPointer, member: name})
	}
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".env"), []byte(env.String()), 0o600))
	if !lean {
		plants = append(plants, plantLarge(t, r, ws)...)
	}
	// A name and a link target.
	npm2 := fake(t, "npm", 42)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "many", npm2), nil, 0o644))
	plants = append(plants, planted{kind: "npm", secret: npm2, pointer: SnapshotPointer, member: "many/" + npm2})
	pw := randString(r, alnum, 20)
	require.NoError(t, os.Symlink("postgres://app:"+pw+"@db.internal/prod", filepath.Join(ws, "db-link")))
	plants = append(plants, planted{kind: "url", secret: pw, pointer: SnapshotPointer, member: "db-link"})

	snap := filepath.Join(dir, "tape.workspace.tar.zst")
	info, err := workspace.SnapshotFile(t.Context(), ws, snap, workspace.Options{})
	require.NoError(t, err)
	tp.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(snap), Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes}
	path := filepath.Join(dir, "tape.json")
	require.NoError(t, tape.Save(path, tp))
	return path, plants
}

// TestParallelScanMatchesSerial: a large tape with every kind of secret planted across its
// steps and its snapshot gives, scanned in parts on several goroutines and passing over
// the containers it has seen (the container memo), exactly the findings of the serial
// scan that walks every container (same order, pointers, offsets, numbering), and every
// planted secret is among them.
func TestParallelScanMatchesSerial(t *testing.T) {
	dir := t.TempDir()
	path, plants := plantEverywhere(t, dir, 30, false)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	parts, ok := splitJSON(data, partBytes)
	require.True(t, ok)
	require.Greater(t, len(data), splitBytes, "the tape must be large enough to be split")
	require.GreaterOrEqual(t, len(parts), 8, "the tape must be split into many parts")

	serial, err := reference(t, path)
	require.NoError(t, err)
	replayed := replayedFindings.Load()
	for _, n := range []int{1, 2, 4, 8} {
		parallel, err := scanWith(t, path, n)
		require.NoError(t, err)
		require.Equal(t, serial, parallel, "%d workers", n)
	}
	require.Greater(t, replayedFindings.Load()-replayed, int64(0), "findings added from the container memo")
	for _, p := range plants {
		assert.True(t, slices.ContainsFunc(serial, func(f Finding) bool {
			return f.Pointer == p.pointer && f.Member == p.member && f.Preview == preview(p.secret)
		}), "%s planted at %s %s not found", p.kind, p.pointer, p.member)
	}
	// The key across the boundary of two chunks of big.log, and the one in their
	// overlap, are each reported once.
	for _, p := range plants {
		if p.member != "big.log" {
			continue
		}
		n := 0
		for _, f := range serial {
			if f.Member == p.member && f.Preview == preview(p.secret) {
				n++
			}
		}
		assert.Equal(t, 1, n, "%s in big.log", p.kind)
	}

	// The comparison has teeth: a tape with one secret more gives other findings.
	tp, err := tape.LoadFile(path)
	require.NoError(t, err)
	th := tp.Threads[len(tp.Threads)-1]
	th.Steps[len(th.Steps)-1].Request.Headers["x-extra-token"] = fake(t, "github-pat", 43)
	require.NoError(t, tape.Save(path, tp))
	more, err := scanWith(t, path, 4)
	require.NoError(t, err)
	assert.NotEqual(t, serial, more)
	assert.Len(t, more, len(serial)+1)
}

// TestScanFilesMatchesSerial: ScanFiles on a directory of tapes large and small gives, in
// the order of the paths, the findings and errors of scanning each file on its own,
// serially; a tape that is not valid JSON gives the serial scan's error and findings.
func TestScanFilesMatchesSerial(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 2 {
		sub := filepath.Join(dir, fmt.Sprintf("big%d", i))
		require.NoError(t, os.Mkdir(sub, 0o755))
		p, _ := plantEverywhere(t, sub, uint64(31+i), true)
		paths = append(paths, p)
	}
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("small%d.json", i))
		tp := smallTape()
		tp.Threads[0].Steps[0].Request.Headers["x-api-key"] = fake(t, "anthropic", uint64(50+i))
		require.NoError(t, tape.Save(p, tp))
		paths = append(paths, p)
	}
	// A large tape cut short after a secret: an error, with the findings before it.
	data, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	cut := filepath.Join(dir, "cut.json")
	require.NoError(t, os.WriteFile(cut, data[:len(data)*3/4], 0o644))
	paths = append(paths, cut)
	// One whose strings break the structure the split follows: an invalid escape.
	bad := []byte(strings.Replace(string(data), `\n`, `\x`, 1))
	badPath := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(badPath, bad, 0o644))
	paths = append(paths, badPath)

	got := ScanFiles(t.Context(), paths)
	require.Len(t, got, len(paths))
	for i, p := range paths {
		want, werr := reference(t, p)
		assert.Equal(t, p, got[i].Path)
		assert.Equal(t, want, got[i].Findings, p)
		if werr == nil {
			assert.NoError(t, got[i].Err, p)
		} else {
			require.Error(t, got[i].Err, p)
			assert.Equal(t, werr.Error(), got[i].Err.Error())
		}
	}
	require.Error(t, got[len(paths)-2].Err)
	require.NotEmpty(t, got[len(paths)-2].Findings, "findings before the cut")
	require.Error(t, got[len(paths)-1].Err)
}

// TestSplitJSONWalksAsWhole: on generated documents (nested objects and arrays, member
// names and strings with escapes, secrets in values and names) split into parts of a few
// bytes to a few kilobytes, walking the parts visits what walking the whole visits, in the
// same order with the same pointers; and walkDoc gives the findings and the error of
// walkJSON on the same documents with bytes changed at random.
func TestSplitJSONWalksAsWhole(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(30, 1))
	type visit struct {
		ptr, value string
		key        bool
	}
	collect := func(walk func(func(*walker, string) error) error) ([]visit, error) {
		var out []visit
		err := walk(func(w *walker, v string) error {
			out = append(out, visit{w.pointer(), strings.Clone(v), w.inKey})
			return nil
		})
		return out, err
	}
	defer func(p, m, c, d int) {
		partBytes, splitBytes, containerMin, memoMinDoc = p, m, c, d
	}(partBytes, splitBytes, containerMin, memoMinDoc)
	containerMin, memoMinDoc = 8, 0
	replayed := replayedFindings.Load()
	for n := range 300 {
		doc, err := json.Marshal(randJSON(r, 0, &[]any{}))
		require.NoError(t, err)
		if n%3 == 0 { // spacing as other writers put it
			doc = []byte(strings.NewReplacer(",", " ,\n ", ":", " : ", "[", "[ ", "{", "{\t").Replace(string(doc)))
		}
		if doc[0] != '{' && doc[0] != '[' {
			continue
		}
		want, err := collect(func(v func(*walker, string) error) error { return walkJSON(doc, v) })
		require.NoError(t, err, "%s", doc)
		for _, size := range []int{1, 16, 200, 4096} {
			parts, ok := splitJSON(doc, size)
			require.True(t, ok, "%s", doc)
			got, err := collect(func(v func(*walker, string) error) error {
				for _, p := range parts {
					if err := walkPart(doc, p, nil, v); err != nil {
						return err
					}
				}
				return nil
			})
			require.NoError(t, err, "size %d: %s", size, doc)
			require.Equal(t, want, got, "size %d: %s", size, doc)
		}

		// walkDoc in parts of 16 bytes, passing over containers of 8 bytes or more it has
		// seen, against walkJSON, on the document and on copies with a byte changed: the
		// same findings, the same error.
		partBytes, splitBytes = 16, 0
		for m := range 4 {
			d := slices.Clone(doc)
			if m > 0 {
				d[r.IntN(len(d))] = `"\{}[],:x0 `[r.IntN(11)]
			}
			ref := s.newScan(t.Context())
			werr := walkJSON(d, ref.visit)
			par := s.newScan(t.Context())
			par.workers = &workers{tokens: make(chan struct{}, 4)}
			perr := par.walkDoc(d)
			require.Equal(t, ref.numbered(), par.numbered(), "%s", d)
			require.Equal(t, fmt.Sprint(werr), fmt.Sprint(perr), "%s", d)
			require.Equal(t, ref.snapshot, par.snapshot)
		}
		partBytes, splitBytes = partSize, splitMin
	}
	require.Greater(t, replayedFindings.Load()-replayed, int64(10), "findings added from the container memo")
}

// randJSON returns a random JSON value of nested objects, arrays, numbers, literals and
// strings (escapes, non-ASCII, now and then a GitHub token or a meta.workspace.snapshot);
// now and then a value made before (seen), as a tape repeats its conversation.
func randJSON(r *rand.Rand, depth int, seen *[]any) any {
	if len(*seen) > 0 && r.IntN(5) == 0 {
		return (*seen)[r.IntN(len(*seen))]
	}
	v := randValue(r, depth, seen)
	*seen = append(*seen, v)
	return v
}

func randValue(r *rand.Rand, depth int, seen *[]any) any {
	str := func() string {
		switch r.IntN(8) {
		case 0:
			return "gh" + "p_" + randString(r, alnum, 36)
		case 1:
			return "line\n\"quoted\"\tand\\ é — 😀"
		case 2:
			return ""
		}
		return randString(r, alnum+" ", r.IntN(40))
	}
	k := r.IntN(10)
	if depth > 5 {
		k = 6 + k%4
	}
	switch {
	case k < 3:
		m := map[string]any{}
		for range r.IntN(6) {
			m[str()] = randJSON(r, depth+1, seen)
		}
		if depth == 0 && r.IntN(4) == 0 {
			m["meta"] = map[string]any{"workspace": map[string]any{"snapshot": "s.tar.zst"}}
		}
		return m
	case k < 6:
		a := make([]any, r.IntN(6))
		for i := range a {
			a[i] = randJSON(r, depth+1, seen)
		}
		return a
	case k == 6:
		return r.Float64() * 1e6
	case k == 7:
		return []any{nil, true, false}[r.IntN(3)]
	}
	return str()
}

// plantLarge writes into the workspace ws a log of more than one chunk of the scan (a key
// across the first boundary, one in the overlap of the first two chunks) and a binary
// file (NUL bytes, random bytes) with a key compiled in.
func plantLarge(t *testing.T, r *rand.Rand, ws string) []planted {
	t.Helper()
	slack := fake(t, "slack-bot", 40)
	npm := fake(t, "npm", 41)
	big := strings.Repeat("lorem ipsum dolor sit amet\n", (chunkSize+2*chunkOverlap)/27+1)
	big = big[:chunkSize-10] + " " + slack + "\n" + big[chunkSize-10:chunkSize+chunkOverlap/2] + " " + npm + "\n" + big
	require.NoError(t, os.WriteFile(filepath.Join(ws, "big.log"), []byte(big), 0o644))
	bin := make([]byte, 1<<20)
	for i := range bin {
		bin[i] = byte(r.Uint32())
	}
	bin[10] = 0
	ghb := kindNamed(t, "github-pat").gen(r)[0]
	copy(bin[600<<10:], "\x00token="+ghb+"\x00")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "app.bin"), bin, 0o755))
	return []planted{
		{kind: "slack-bot", secret: slack, pointer: SnapshotPointer, member: "big.log"},
		{kind: "npm", secret: npm, pointer: SnapshotPointer, member: "big.log"},
		{kind: "github-pat", secret: ghb, pointer: SnapshotPointer, member: "app.bin"},
	}
}

// TestContainerMemoComparesBytes: two messages of the same length and the same first and
// last bytes (the same memo key) but a key in the middle of the second only: the second is
// walked, not taken for the first, and its key is found.
func TestContainerMemoComparesBytes(t *testing.T) {
	s, err := Default()
	require.NoError(t, err)
	key := fake(t, "github-pat", 60)
	pad := strings.Repeat("lorem ipsum ", 30)
	msg := func(middle string) map[string]any {
		return map[string]any{"role": "user", "content": pad + middle + pad}
	}
	scan := func(messages ...any) []Finding {
		doc, err := json.Marshal(map[string]any{"threads": []any{map[string]any{"steps": []any{
			map[string]any{"request": map[string]any{"raw": map[string]any{"messages": messages}}},
		}}}})
		require.NoError(t, err)
		sc := s.newScan(t.Context())
		require.NoError(t, walkJSONMemo(doc, sc, sc.visit))
		return sc.numbered()
	}
	const at = "/threads/0/steps/0/request/raw/messages/"
	found := scan(msg("use "+strings.Repeat("x", len(key))), msg("use "+key))
	require.Len(t, found, 1)
	assert.Equal(t, at+"1/content", found[0].Pointer)
	assert.Equal(t, preview(key), found[0].Preview)

	// The same message twice: found at both places, the second from the memo.
	before := replayedFindings.Load()
	found = scan(msg("use "+key), msg("use "+key))
	require.Len(t, found, 2)
	assert.Equal(t, at+"0/content", found[0].Pointer)
	assert.Equal(t, at+"1/content", found[1].Pointer)
	assert.Equal(t, 1, found[1].Secret)
	assert.Equal(t, int64(1), replayedFindings.Load()-before)
}
