package tape

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goldenTapes returns the project's golden tapes, sealed, with their canonical encodings.
func goldenTapes(t *testing.T) map[string]*Tape {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.json"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join("..", "testdata", "replay", "*.json"))
	require.NoError(t, err)
	files = append(files, more...)
	require.NotEmpty(t, files)
	out := map[string]*Tape{}
	for _, f := range files {
		tp, err := LoadFile(f)
		require.NoError(t, err, f)
		require.NoError(t, Seal(tp, testHashing))
		out[f] = tp
	}
	return out
}

func mustMarshal(t *testing.T, tp *Tape) []byte {
	t.Helper()
	b, err := Marshal(tp)
	require.NoError(t, err)
	return b
}

func mustVerify(t *testing.T, data []byte, opts VerifyOptions) *Verification {
	t.Helper()
	v, err := Verify(bytes.NewReader(data), opts)
	require.NoError(t, err)
	return v
}

// flip changes one byte: a letter to the other case (encoding/json matches field names
// without regard to case, so this is the flip most likely to slip through a decoder), and
// anything else in its lowest bit.
func flip(b byte) byte {
	if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' {
		return b ^ 0x20
	}
	return b ^ 0x01
}

// TestVerifySealedGoldens: a sealed golden tape verifies; an unsealed one verifies as
// "no digests" and is no failure.
func TestVerifySealedGoldens(t *testing.T) {
	for name, tp := range goldenTapes(t) {
		data := mustMarshal(t, tp)
		v := mustVerify(t, data, VerifyOptions{Hashing: testHashing})
		require.Equal(t, DigestsOK, v.State, name)
		require.NoError(t, v.Err(), name)
		require.Equal(t, tp.Digest.Root, v.Root)
		var steps int
		for _, th := range tp.Threads {
			steps += len(th.Steps)
		}
		require.Equal(t, steps, v.Steps, name)

		plain, err := os.ReadFile(name)
		require.NoError(t, err, name)
		v = mustVerify(t, plain, VerifyOptions{Hashing: testHashing})
		require.Equal(t, DigestsNone, v.State, name)
		require.NoError(t, v.Err())
	}
}

// TestVerifyEveryByteOfEveryStep flips each byte of every step's canonical encoding (its
// digest field included) in every golden tape, one at a time, and checks that the step's
// check fails; for a sample of the flips, that Verify of the whole file names that step.
func TestVerifyEveryByteOfEveryStep(t *testing.T) {
	stride := 1
	if raceDetector {
		stride = 13 // the race detector makes each check some ten times slower
	}
	for name, tp := range goldenTapes(t) {
		data := mustMarshal(t, tp)
		for ti, th := range tp.Threads {
			prev, err := testHashing.genesis(tp.Meta.TapeID, th.ID, th.Parent)
			require.NoError(t, err)
			for si, s := range th.Steps {
				raw, err := MarshalStep(s)
				require.NoError(t, err)
				at := bytes.Index(data, raw)
				require.GreaterOrEqual(t, at, 0, "the step's encoding is in the file")
				want, _ := parseSum(s.Digest)
				ok, _ := checkStep(prev, raw)
				require.True(t, ok, "%s step %d/%d verifies unchanged", name, ti, si)
				ptr := fmt.Sprintf("/threads/%d/steps/%d", ti, si)
				mut := bytes.Clone(raw)
				for k := 0; k < len(raw); k += stride {
					mut[k] = flip(raw[k])
					if ok, _ := checkStep(prev, mut); ok && !sameContent(raw, mut) {
						t.Fatalf("%s %s: flipping byte %d (%q to %q) of the step is not caught", name, ptr, k, raw[k], mut[k])
					}
					if k == 0 || k == len(raw)/2 || k == len(raw)-stepDigestLen()-1 || k == len(raw)-3 {
						file := bytes.Clone(data)
						file[at+k] = mut[k]
						v := mustVerify(t, file, VerifyOptions{Hashing: testHashing})
						require.Equal(t, DigestsMismatch, v.State, "%s %s byte %d", name, ptr, k)
						require.True(t, v.Pointer == ptr || v.Pointer == ptr+"/digest", "%s byte %d: Verify names %s (%s), want %s", name, k, v.Pointer, v.Problem, ptr)
						require.ErrorIs(t, v.Err(), ErrNotVerified)
					}
					mut[k] = raw[k]
				}
				prev = want
			}
		}
	}
}

// checkStep is Verify's check of one step after the link prev.
func checkStep(prev sum, raw []byte) (bool, string) {
	c, err := canonical(raw)
	if err != nil {
		return false, err.Error()
	}
	content, d, ok := testHashing.stepSumCanonical(c)
	if !ok {
		return false, "digest not a string"
	}
	want, ok := parseSum(d)
	return ok && testHashing.chain(prev, content) == want, ""
}

// sameContent says whether two encodings hold the same value (a flip of a hex digit's case
// in a \u escape changes the spelling only, which the digests do not cover).
func sameContent(a, b []byte) bool {
	ca, err1 := canonical(a)
	cb, err2 := canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// TestVerifyCatchesEdits: reordering two steps, dropping the last step, swapping threads,
// editing meta, or moving a step into another thread is caught and named.
func TestVerifyCatchesEdits(t *testing.T) {
	src, err := LoadFile(filepath.Join("..", "testdata", "replay", "claude-code.json"))
	require.NoError(t, err)
	require.NoError(t, Seal(src, testHashing))
	// A second thread, so that threads can be swapped.
	sub := &Thread{ID: "sub-1", Parent: &Parent{ThreadID: src.Threads[0].ID, ToolCallID: "toolu_x"}}
	for _, s := range src.Threads[0].Steps[:2] {
		c := *s
		sub.Steps = append(sub.Steps, &c)
	}
	src.Threads = append(src.Threads, sub)
	require.NoError(t, Seal(src, testHashing))
	good := mustMarshal(t, src)
	require.Equal(t, DigestsOK, mustVerify(t, good, VerifyOptions{Hashing: testHashing}).State)

	edit := func(fn func(tp *Tape)) []byte {
		tp, err := Unmarshal(good)
		require.NoError(t, err)
		fn(tp)
		return mustMarshal(t, tp)
	}
	cases := []struct {
		name, pointer string
		data          []byte
	}{
		{"reorder two steps", "/threads/0/steps/1", edit(func(tp *Tape) {
			st := tp.Threads[0].Steps
			st[1], st[2] = st[2], st[1]
		})},
		{"drop the last step", "/digest/root", edit(func(tp *Tape) {
			tp.Threads[0].Steps = tp.Threads[0].Steps[:len(tp.Threads[0].Steps)-1]
		})},
		{"drop the first step", "/threads/0/steps/0", edit(func(tp *Tape) {
			tp.Threads[0].Steps = tp.Threads[0].Steps[1:]
		})},
		{"swap threads", "/digest/root", edit(func(tp *Tape) {
			tp.Threads[0], tp.Threads[1] = tp.Threads[1], tp.Threads[0]
		})},
		{"swap thread ids", "/threads/0/steps/0", edit(func(tp *Tape) {
			tp.Threads[0].ID, tp.Threads[1].ID = tp.Threads[1].ID, tp.Threads[0].ID
		})},
		{"move a step to another thread", "/threads/1/steps/2", edit(func(tp *Tape) {
			tp.Threads[1].Steps = append(tp.Threads[1].Steps, tp.Threads[0].Steps[3])
		})},
		{"edit meta", "/meta", edit(func(tp *Tape) { tp.Meta.Model = "cheaper-model" })},
		{"edit a tool result", "/threads/0/steps/0", edit(func(tp *Tape) {
			tp.Threads[0].Steps[0].ToolResults[0].IsError = !tp.Threads[0].Steps[0].ToolResults[0].IsError
		})},
		{"strip one step's digest", "/threads/0/steps/4", edit(func(tp *Tape) { tp.Threads[0].Steps[4].Digest = "" })},
		{"strip the root", "/digest", edit(func(tp *Tape) { tp.Digest = nil })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := mustVerify(t, c.data, VerifyOptions{Hashing: testHashing})
			require.Equal(t, DigestsMismatch, v.State, "%+v", v)
			require.Equal(t, c.pointer, v.Pointer, v.Problem)
		})
	}
}

// TestVerifyIndented: a tape re-indented by another tool verifies (its content is the
// same); an edit to it does not.
func TestVerifyIndented(t *testing.T) {
	for name, tp := range goldenTapes(t) {
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, mustMarshal(t, tp), "", "  "))
		v := mustVerify(t, buf.Bytes(), VerifyOptions{Hashing: testHashing})
		require.Equal(t, DigestsOK, v.State, "%s: %s %s", name, v.Pointer, v.Problem)
		edited := bytes.Replace(buf.Bytes(), []byte(`"is_error": false`), []byte(`"is_error": true`), 1)
		if !bytes.Equal(edited, buf.Bytes()) {
			require.Equal(t, DigestsMismatch, mustVerify(t, edited, VerifyOptions{Hashing: testHashing}).State, name)
		}
	}
}

// TestVerifySignature: a signed tape verifies with its key and not with another; a
// signature over another root, or none where a key is asked for, fails.
func TestVerifySignature(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	other, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	tp, err := LoadFile(filepath.Join("..", "testdata", "anthropic-json.json"))
	require.NoError(t, err)
	require.NoError(t, Seal(tp, signing(key)))
	data := mustMarshal(t, tp)

	v := mustVerify(t, data, VerifyOptions{Hashing: testHashing, Key: pub})
	require.Equal(t, DigestsOK, v.State, v.Problem)
	require.True(t, v.Signed && v.SignatureOK)
	v = mustVerify(t, data, VerifyOptions{Hashing: testHashing})
	require.True(t, v.SignatureOK, "checked with the key the tape names")

	v = mustVerify(t, data, VerifyOptions{Hashing: testHashing, Key: other})
	require.Equal(t, DigestsMismatch, v.State)
	require.Equal(t, "/digest/signature", v.Pointer)

	// Resealed by someone without the key: the digests match, the signature cannot.
	tp.Meta.Model = "edited"
	require.NoError(t, Seal(tp, testHashing))
	unsigned := mustMarshal(t, tp)
	require.Equal(t, DigestsOK, mustVerify(t, unsigned, VerifyOptions{Hashing: testHashing}).State)
	v = mustVerify(t, unsigned, VerifyOptions{Hashing: testHashing, Key: pub})
	require.Equal(t, DigestsMismatch, v.State)
	require.Equal(t, "/digest/signature", v.Pointer)

	// A signature copied from the original onto the edited tape.
	var d Digest
	d = *tp.Digest
	var orig Tape
	require.NoError(t, json.Unmarshal(data, &orig))
	d.PublicKey, d.Signature = orig.Digest.PublicKey, orig.Digest.Signature
	tp.Digest = &d
	v = mustVerify(t, mustMarshal(t, tp), VerifyOptions{Hashing: testHashing})
	require.Equal(t, DigestsMismatch, v.State)
	require.Equal(t, "/digest/signature", v.Pointer)
}

// TestWriterKilledMidRecording: a process that records with digests is killed with
// SIGKILL between steps, many steps in; the tape it leaves verifies, up to its last step.
func TestWriterKilledMidRecording(t *testing.T) {
	if os.Getenv("TAPEBOX_TEST_WRITER_HELPER") != "" {
		writerHelper(os.Getenv("TAPEBOX_TEST_WRITER_HELPER"))
		return
	}
	path := filepath.Join(t.TempDir(), "run.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterKilledMidRecording$")
	cmd.Env = append(os.Environ(), "TAPEBOX_TEST_WRITER_HELPER="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	buf := make([]byte, 64)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "step 40\n") {
		n, err := out.Read(buf)
		require.NoError(t, err, "the helper's output: %q", seen.String())
		seen.Write(buf[:n])
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	tp, err := Unmarshal(data)
	require.NoError(t, err, "the tape a killed writer leaves is complete")
	require.Nil(t, tp.Meta.Ended)
	v := mustVerify(t, data, VerifyOptions{Hashing: testHashing})
	require.Equal(t, DigestsOK, v.State, "%s: %s", v.Pointer, v.Problem)
	var steps int
	for _, th := range tp.Threads {
		steps += len(th.Steps)
	}
	require.GreaterOrEqual(t, steps, 40)
	require.Equal(t, steps, v.Steps, "every step it holds is checked")
}

// writerHelper records steps into path until it is killed, telling its parent each step.
func writerHelper(path string) {
	tp := New(ProviderAnthropic, time.Now())
	w, err := Create(path, tp, WithDigests(testHashing))
	if err != nil {
		panic(err)
	}
	w.SetFsync(false)
	main, _ := w.AddThread("main", nil)
	sub := -1
	for i := 0; ; i++ {
		ti := main
		if i == 5 {
			sub, _ = w.AddThread("sub-1", &Parent{ThreadID: "main", ToolCallID: "toolu_4"})
		}
		if sub >= 0 && i%3 == 0 {
			ti = sub
		}
		si, err := w.AppendStep(ti, testStep(i, 3000))
		if err != nil {
			panic(err)
		}
		_ = w.Release(ti, si)
		if si > 0 {
			_ = w.UpdateStepEnd(ti, si-1, func(rs *[]ToolResult, timing *Timing) {
				*rs = []ToolResult{{ToolCallID: "toolu_" + strconv.Itoa(i), Content: []Block{{Type: BlockText, Text: "ok"}}}}
			})
		}
		if err := w.Sync(); err != nil {
			panic(err)
		}
		fmt.Printf("step %d\n", i)
	}
}

// oneByteReader hands out one byte per Read: every value is cut by the reads somewhere.
type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], r.b = r.b[0], r.b[1:]
	return 1, nil
}

// TestVerifyStreams: Verify reads from any reader, however it cuts the input, with the
// same outcome; a tape cut short is an error, not a pass.
func TestVerifyStreams(t *testing.T) {
	tp, err := LoadFile(filepath.Join("..", "testdata", "openai-chat-stream.json"))
	require.NoError(t, err)
	require.NoError(t, Seal(tp, testHashing))
	data := mustMarshal(t, tp)
	v, err := Verify(&oneByteReader{data}, VerifyOptions{Hashing: testHashing})
	require.NoError(t, err)
	require.Equal(t, DigestsOK, v.State, "%s %s", v.Pointer, v.Problem)
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, data, "", "\t"))
	v, err = Verify(&oneByteReader{indented.Bytes()}, VerifyOptions{Hashing: testHashing})
	require.NoError(t, err)
	require.Equal(t, DigestsOK, v.State, "%s %s", v.Pointer, v.Problem)
	for _, cut := range []int{len(data) / 3, len(data) - 5} {
		v, err := Verify(bytes.NewReader(data[:cut]), VerifyOptions{Hashing: testHashing})
		if err == nil {
			require.Equal(t, DigestsMismatch, v.State, "a tape cut at byte %d", cut)
		}
	}
}
