package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// budgetScript asks for a different call every turn, then ends.
func budgetScript(n int) fakeprovider.Script {
	turns := make([]fakeprovider.Turn, n+1)
	for i := range n {
		turns[i] = fakeprovider.Turn{Text: strings.Repeat("working ", 3*i+1), Calls: []tape.ToolCall{fakeprovider.Call("Bash", map[string]string{"command": fmt.Sprintf("echo step %d", i)})}}
	}
	turns[n] = fakeprovider.Turn{Text: "All done."}
	return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns}}}
}

// recordBudget runs tapebox record with the helper agent and extra flags.
func recordBudget(t *testing.T, out string, extra ...string) (int, string) {
	t.Helper()
	fp := testkit.NewProvider(t, budgetScript(8))
	t.Chdir(t.TempDir())
	t.Setenv(recordAgentEnv, "1")
	var stdout, stderr syncBuffer
	args := append([]string{"record", "--output", out, "--upstream", fp.URL(), "--no-workspace", "--quiet"}, extra...)
	args = append(args, "--", os.Args[0], "-test.run=^TestRecordHelperAgent$")
	code := RunEnv(t.Context(), args, &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	return code, stderr.String()
}

// TestRecordMaxCost: record --prices FILE --max-cost USD stops the run on the call whose
// cost reaches the limit at the file's prices (a calibration run gives every step's cost),
// exits 3 naming the limit, and the tape ends budget after exactly that step.
func TestRecordMaxCost(t *testing.T) {
	priceFile := filepath.Join(t.TempDir(), "prices.json")
	require.NoError(t, os.WriteFile(priceFile, []byte(`{"date":"2026-11-30","models":{"fake-model":{"input":2000,"output":10000,"cache_read":200,"cache_write":2500}}}`), 0o644))
	table, err := prices.Load(priceFile)
	require.NoError(t, err)

	calib := filepath.Join(t.TempDir(), "calib.json")
	code, errOut := recordBudget(t, calib, "--prices", priceFile)
	require.Equal(t, 0, code, errOut)
	tp, err := tape.LoadFile(calib)
	require.NoError(t, err)
	require.Equal(t, tape.EndComplete, tp.Meta.Ended.Reason)
	var cum []float64
	var total float64
	for _, s := range tp.Main().Steps {
		c := table.Cost("fake-model", s.Response.Usage)
		require.NotNil(t, c)
		total += *c
		cum = append(cum, total)
	}
	require.Len(t, cum, 9)

	const trip = 3 // the step whose cost reaches the limit
	limit := (cum[trip-1] + cum[trip]) / 2
	out := filepath.Join(t.TempDir(), "run.json")
	code, errOut = recordBudget(t, out, "--prices", priceFile, "--max-cost", fmt.Sprint(limit))
	require.Equal(t, ExitBudget, code, errOut)
	assert.Contains(t, errOut, "--max-cost $"+fmt.Sprint(limit)+" at the prices of the table dated 2026-11-30")
	assert.Contains(t, errOut, fmt.Sprintf("stopped by the breaker: max_cost: the run cost $%.4f after %d model calls", cum[trip], trip+1))
	tp, err = tape.LoadFile(out)
	require.NoError(t, err)
	require.Len(t, tp.Main().Steps, trip+1)
	require.Equal(t, tape.EndBudget, tp.Meta.Ended.Reason)
	require.Equal(t, "max_cost", tp.Meta.Ended.Limit)
	require.Equal(t, &tape.Limits{MaxCostUSD: limit}, tp.Meta.Limits)

	// inspect shows the limits, the reason and the digests.
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, RunEnv(t.Context(), []string{"inspect", out}, &Env{Stdout: &stdout, Stderr: &stderr}), stderr.String())
	for _, want := range []string{"limits     max cost $" + fmt.Sprint(limit), "budget at", ", limit max_cost: the run cost", "digests    ok: 4 steps chained, root sha256:", "unsigned"} {
		assert.Contains(t, stdout.String(), want)
	}
}

// TestRecordFlagErrors: bad limits and keys are usage errors that name the flag.
func TestRecordFlagErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(bad, []byte("not a key"), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-cost", "-1"}, "--max-cost"},
		{[]string{"--max-repeat", "-2"}, "--max-repeat"},
		{[]string{"--prices", filepath.Join(t.TempDir(), "none.json")}, "--prices"},
		{[]string{"--sign", bad}, "--sign: " + bad},
		{[]string{"--sign", bad, "--no-digests"}, "--no-digests"},
	} {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{"record", "--output", filepath.Join(t.TempDir(), "r.json")}, c.args...), "--", "true")
		code := RunEnv(t.Context(), args, &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
		assert.Equal(t, ExitUsage, code, "%v: %s", c.args, stderr.String())
		assert.Contains(t, stderr.String(), c.want)
	}
}

// TestVerifyCommand: verify says ok for a recorded tape, names the step of a flipped byte
// and exits 1, says "no digests" for an older tape (a failure only with
// --require-digests), and checks a signature made with record --sign against --key.
func TestVerifyCommand(t *testing.T) {
	golden, err := filepath.Abs(filepath.Join("..", "testdata", "anthropic-json.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	seed := bytes.Repeat([]byte{3}, ed25519.SeedSize)
	keyFile := filepath.Join(dir, "key.hex")
	require.NoError(t, os.WriteFile(keyFile, []byte(hex.EncodeToString(seed)+"\n"), 0o600))
	pubFile := filepath.Join(dir, "key.pub")
	require.NoError(t, os.WriteFile(pubFile, []byte(hex.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))), 0o644))
	otherPub := filepath.Join(dir, "other.pub")
	require.NoError(t, os.WriteFile(otherPub, []byte(strings.Repeat("ab", 32)), 0o644))

	rec := filepath.Join(dir, "run.json")
	code, errOut := recordBudget(t, rec, "--sign", keyFile)
	require.Equal(t, 0, code, errOut)

	verify := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := RunEnv(t.Context(), append([]string{"verify"}, args...), &Env{Stdout: &stdout, Stderr: &stderr})
		return code, stdout.String() + stderr.String()
	}
	code, out := verify(rec)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, rec+": ok (9 steps, root sha256:")
	assert.Contains(t, out, "signature ok")
	code, out = verify("--key", pubFile, rec)
	require.Equal(t, 0, code, out)
	code, out = verify("--key", otherPub, rec)
	require.Equal(t, 1, code, out)
	assert.Contains(t, out, "mismatch at /digest/signature")

	// One byte of the first step that mentions "echo step 5" changed.
	data, err := os.ReadFile(rec)
	require.NoError(t, err)
	at := bytes.Index(data, []byte("echo step 5"))
	require.Positive(t, at)
	bad := bytes.Clone(data)
	bad[at+10] = '6'
	edited := filepath.Join(dir, "edited.json")
	require.NoError(t, os.WriteFile(edited, bad, 0o644))
	code, out = verify(rec, edited)
	require.Equal(t, 1, code, out)
	tp, err := tape.Unmarshal(data)
	require.NoError(t, err)
	want := -1
	for i, s := range tp.Main().Steps {
		if from := bytes.Index(data, mustStep(t, s)); from <= at && at < from+len(mustStep(t, s)) {
			want = i
		}
	}
	require.GreaterOrEqual(t, want, 0)
	assert.Contains(t, out, fmt.Sprintf("%s: mismatch at /threads/0/steps/%d: the step does not match its digest", edited, want))
	assert.Contains(t, out, "1 of 2 tapes do not verify")

	code, out = verify(golden)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, golden+": no digests")
	code, out = verify("--require-digests", golden)
	require.Equal(t, 1, code, out)
	code, out = verify("--json", rec)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, `"signature_ok": true`)
}

func mustStep(t *testing.T, s *tape.Step) []byte {
	t.Helper()
	b, err := tape.MarshalStep(s)
	require.NoError(t, err)
	return b
}

// TestReadKeys: the key files --sign-key and verify --key take, in each form, and the errors
// for the wrong kind of key and for content that is no key.
func TestReadKeys(t *testing.T) {
	dir := t.TempDir()
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	pkix, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	privPEM := write("priv.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	pubPEM := write("pub.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix}))

	for _, p := range []string{privPEM, write("seed.hex", []byte(hex.EncodeToString(seed)+"\n")), write("key.hex", []byte(hex.EncodeToString(priv)))} {
		got, err := readSigningKey(p)
		require.NoError(t, err, p)
		assert.Equal(t, priv, got, p)
	}
	for _, p := range []string{pubPEM, write("pub.hex", []byte(" "+hex.EncodeToString(pub)+"\n"))} {
		got, err := readPublicKey(p)
		require.NoError(t, err, p)
		assert.Equal(t, pub, got, p)
	}

	short := write("short.hex", []byte("abcd"))
	sign := func(p string) error { _, err := readSigningKey(p); return err }
	verify := func(p string) error { _, err := readPublicKey(p); return err }
	for _, tc := range []struct {
		read func(string) error
		path string
		want string
	}{
		{sign, pubPEM, pubPEM + ": "},
		{sign, short, short + ": 2 bytes: want a 32-byte seed or a 64-byte key"},
		{sign, write("text", []byte("not a key")), "neither PEM nor hex"},
		{verify, privPEM, privPEM + ": "},
		{verify, short, short + ": want 64 hex digits or PEM of an ed25519 public key"},
		{verify, filepath.Join(dir, "missing"), "no such file"},
	} {
		err := tc.read(tc.path)
		require.Error(t, err, tc.path)
		assert.Contains(t, err.Error(), tc.want, tc.path)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecPKIX, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	require.NoError(t, err)
	ecPEM := write("ec.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecPKIX}))
	assert.EqualError(t, verify(ecPEM), ecPEM+": a *ecdsa.PublicKey, not an ed25519 key")
}
