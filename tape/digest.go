package tape

import (
	"bytes"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
)

// DigestAlgorithm names the digest scheme a Digest uses.
const DigestAlgorithm = "sha256-chain-1"

// Digest is a tape's tamper-evidence record, written after its threads.
//
// Each step carries a digest, a link of its thread's chain:
//
//	content(step) = SHA-256(the step's canonical encoding without its digest field)
//	link(0)       = SHA-256("tapebox chain 1\n" || canonical [tape_id, thread id, parent])
//	digest(step)  = SHA-256(link(previous) || content(step))
//
// so a step's digest binds it to the steps before it, to its thread and to the tape's
// identity. Root binds the rest: SHA-256("tapebox root 1\n" || Meta || each thread's last
// link, in thread order), where Meta is SHA-256 of the canonical encoding of meta. A
// recorder writes all of it with every persisted step, so a recording cut at any moment
// verifies up to its last step. Signature, when present, is an ed25519 signature of
// "tapebox root 1\n" || Root by the key PublicKey names.
type Digest struct {
	Algorithm string `json:"algorithm"`
	// Meta and Root are "sha256:HEX".
	Meta string `json:"meta"`
	Root string `json:"root"`
	// PublicKey (hex) and Signature (hex) are set on a signed tape.
	PublicKey string `json:"public_key,omitempty"`
	Signature string `json:"signature,omitempty"`
}

type sum = [sumSize]byte

const sumPrefix = "sha256:"

func formatSum(s sum) string { return sumPrefix + hex.EncodeToString(s[:]) }

func parseSum(s string) (sum, bool) {
	var out sum
	h, ok := bytes.CutPrefix([]byte(s), []byte(sumPrefix))
	if !ok || len(h) != 2*len(out) {
		return out, false
	}
	_, err := hex.Decode(out[:], h)
	return out, err == nil && formatSum(out) == s // lower-case hex only: one spelling per digest
}

// genesis is the link a thread's chain starts from.
func genesis(tapeID, threadID string, parent *Parent) (sum, error) {
	b, err := marshalPiece([]any{tapeID, threadID, parent})
	if err != nil {
		return sum{}, err
	}
	h := newHash()
	h.Write([]byte("tapebox chain 1\n"))
	h.Write(b)
	return sum(h.Sum(nil)), nil
}

// chain is the link after prev for a step whose content hash is content.
func chain(prev, content sum) sum {
	var b [2 * sumSize]byte
	copy(b[:], prev[:])
	copy(b[sumSize:], content[:])
	return sum256(b[:])
}

const rootPrefix = "tapebox root 1\n"

// rootOf is the root over the meta's hash and the threads' last links.
func rootOf(meta sum, lasts []sum) sum {
	h := newHash()
	h.Write([]byte(rootPrefix))
	h.Write(meta[:])
	for _, l := range lasts {
		h.Write(l[:])
	}
	return sum(h.Sum(nil))
}

func signedMessage(root sum) []byte { return append([]byte(rootPrefix), root[:]...) }

// stepDigestSuffix is how a step's encoding ends when it carries a digest:
// ,"digest":"sha256:<64 hex>"}.
const stepDigestLen = len(`,"digest":"sha256:`) + 64 + len(`"}`)

// stepContent returns the canonical encoding of a step without its digest field, given the
// step's encoding as a canonical writer wrote it, and the digest it carries. ok is false
// when raw does not end the way a canonical step with a digest does.
func stepContent(raw []byte) (content []byte, digest string, ok bool) {
	if len(raw) < stepDigestLen {
		return nil, "", false
	}
	tail := raw[len(raw)-stepDigestLen:]
	if !bytes.HasPrefix(tail, []byte(`,"digest":"sha256:`)) || !bytes.HasSuffix(tail, []byte(`"}`)) {
		return nil, "", false
	}
	d := string(tail[len(`,"digest":"`) : len(tail)-2])
	return raw[:len(raw)-stepDigestLen], d, true // the caller adds the closing brace
}

// stepHasher hashes a step's encoding as the Writer builds it, piece by piece, keeping the
// hash's state after the request and after the answer so that a change of a later piece
// costs that piece only.
type stepHasher struct {
	afterRequest []byte // sha256 state after `{"request":` and the request
	afterAnswer  []byte // and after the answer
	content      sum
	link         sum
}

func marshalState(h hash.Hash) []byte {
	b, _ := h.(encoding.BinaryMarshaler).MarshalBinary()
	return b
}

func restoreState(state []byte) hash.Hash {
	h := newHash()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		panic("tape: restore a sha256 state: " + err.Error()) // the state came from MarshalBinary
	}
	return h
}

// hashRequest starts a step's hash with its request's encoding.
func hashRequest(request []byte) []byte {
	h := newHash()
	h.Write([]byte(`{"request":`))
	h.Write(request)
	return marshalState(h)
}

// hashAnswer continues from the request's state with the answer's encoding.
func hashAnswer(afterRequest, answer []byte) []byte {
	h := restoreState(afterRequest)
	h.Write(answer)
	return marshalState(h)
}

// hashEnd finishes the content hash with the step's end (tool results and timing, before
// the closing brace).
func hashEnd(afterAnswer, end []byte) sum {
	h := restoreState(afterAnswer)
	h.Write(end)
	h.Write([]byte("}"))
	return sum(h.Sum(nil))
}

// DigestState says what a tape's digests show.
type DigestState string

// The outcomes of Verify.
const (
	// DigestsNone: the tape carries no digests (older tapes, or written without them).
	DigestsNone DigestState = "no digests"
	// DigestsOK: every step's link and the root match.
	DigestsOK DigestState = "ok"
	// DigestsMismatch: a link, the meta's hash, the root or the signature does not match.
	DigestsMismatch DigestState = "mismatch"
)

// Verification is the outcome of Verify.
type Verification struct {
	State DigestState
	// Steps is how many steps were checked (up to the first mismatch).
	Steps int
	// Root is the tape's root digest, when it has one.
	Root string
	// Signed says the tape carries a signature; SignatureOK that it verified (with the key
	// VerifyOptions.Key names, or the one the tape names when none was given).
	Signed, SignatureOK bool
	// Pointer is the JSON pointer of the first part that does not match ("/threads/0/steps/3",
	// "/meta", "/digest/root"), and Problem says how.
	Pointer, Problem string
}

// VerifyOptions are Verify's options.
type VerifyOptions struct {
	// Key, when set, is the ed25519 public key the tape must be signed with (an
	// ed25519.PublicKey).
	Key []byte
}

// ErrNotVerified is wrapped by the error Verification.Err returns.
var ErrNotVerified = errors.New("tape does not verify")

// Err returns nil when the tape verified (or carries no digests and no key was asked for),
// else an error naming the first mismatch.
func (v *Verification) Err() error {
	if v.State == DigestsMismatch {
		return fmt.Errorf("%w: %s: %s", ErrNotVerified, v.Pointer, v.Problem)
	}
	return nil
}

// Verify checks the digests of the tape r holds: each step's link, the meta's hash, the
// root and the signature. It streams: memory holds one step at a time. It reads the file's
// own bytes: a step's content is its
// encoding as found when that is canonical, else the canonical encoding of the step it
// decodes to, so a tape re-indented by another tool verifies as long as its content is the
// same. The error is for data that is not a tape at all; a tape whose digests do not match
// gives a Verification with State DigestsMismatch.
func Verify(r io.Reader, opts VerifyOptions) (*Verification, error) {
	if crypt == nil {
		return nil, ErrNoCrypto
	}
	v := &Verification{State: DigestsOK}
	fail := func(ptr, format string, args ...any) (*Verification, error) {
		v.State, v.Pointer, v.Problem = DigestsMismatch, ptr, fmt.Sprintf(format, args...)
		return v, nil
	}
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("verify tape: %w", err)
	}
	var (
		meta      Meta
		metaSum   sum
		haveMeta  bool
		lasts     []sum
		digest    *Digest
		anyDigest bool
		noDigest  string // the pointer of a step without a digest
	)
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("verify tape: %w", err)
		}
		switch key {
		case "version":
			var n int
			if err := dec.Decode(&n); err != nil || n != Version {
				return nil, fmt.Errorf("verify tape: version: %w", ErrUnsupportedVersion)
			}
		case "meta":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fail("/meta", "not valid JSON: %v", err)
			}
			if err := strictDecode(raw, &meta); err != nil {
				return fail("/meta", "does not decode: %v", err)
			}
			metaSum, err = canonicalSum(raw)
			if err != nil {
				return nil, fmt.Errorf("verify tape: meta: %w", err)
			}
			haveMeta = true
		case "threads":
			if !haveMeta {
				return nil, errors.New("verify tape: threads before meta: not a canonical tape")
			}
			if err := expectDelim(dec, '['); err != nil {
				return fail("/threads", "%v", err)
			}
			for ti := 0; dec.More(); ti++ {
				last, problem, ptr, err := verifyThread(dec, ti, meta.TapeID, v, &anyDigest, &noDigest)
				if err != nil {
					return nil, err
				}
				if problem != "" {
					return fail(ptr, "%s", problem)
				}
				lasts = append(lasts, last)
			}
			if err := expectDelim(dec, ']'); err != nil {
				return fail("/threads", "%v", err)
			}
		case "digest":
			if err := dec.Decode(&digest); err != nil {
				return fail("/digest", "does not decode: %v", err)
			}
		default:
			return fail("", "unknown field %q", key)
		}
	}
	if digest == nil {
		if anyDigest {
			return fail("/digest", "steps carry digests but the tape has no root digest")
		}
		v.State = DigestsNone
		if opts.Key != nil {
			return fail("/digest", "no digests, so no signature to check against the key")
		}
		return v, nil
	}
	if noDigest != "" {
		return fail(noDigest, "step carries no digest")
	}
	v.Root = digest.Root
	if digest.Algorithm != DigestAlgorithm {
		return fail("/digest/algorithm", "unknown algorithm %q (this build knows %q)", digest.Algorithm, DigestAlgorithm)
	}
	if got := formatSum(metaSum); got != digest.Meta {
		return fail("/meta", "meta hashes to %s, the tape says %s", got, digest.Meta)
	}
	root := rootOf(metaSum, lasts)
	if got := formatSum(root); got != digest.Root {
		return fail("/digest/root", "the threads' last links give root %s, the tape says %s (threads reordered, added or removed?)", got, digest.Root)
	}
	if digest.Signature != "" || opts.Key != nil {
		v.Signed = digest.Signature != ""
		if !v.Signed {
			return fail("/digest/signature", "the tape is not signed")
		}
		pub := opts.Key
		if pub == nil {
			b, err := hex.DecodeString(digest.PublicKey)
			if err != nil || len(b) != crypt.PublicKeySize {
				return fail("/digest/public_key", "not an ed25519 public key in hex")
			}
			pub = b
		}
		sig, err := hex.DecodeString(digest.Signature)
		if err != nil || !crypt.Verify(pub, signedMessage(root), sig) {
			return fail("/digest/signature", "the signature does not verify with key %x", []byte(pub))
		}
		v.SignatureOK = true
	}
	return v, nil
}

// verifyThread checks one thread's chain and returns its last link, or the problem and
// the pointer of the part that does not match.
func verifyThread(dec *json.Decoder, ti int, tapeID string, v *Verification, anyDigest *bool, noDigest *string) (last sum, problem, ptr string, err error) {
	ptr = fmt.Sprintf("/threads/%d", ti)
	if err := expectDelim(dec, '{'); err != nil {
		return last, err.Error(), ptr, nil
	}
	var (
		id       string
		parent   *Parent
		seenHead bool
	)
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return last, fmt.Sprintf("not valid JSON: %v", err), ptr, nil
		}
		switch key {
		case "id":
			if err := dec.Decode(&id); err != nil {
				return last, fmt.Sprintf("id: %v", err), ptr + "/id", nil
			}
		case "parent":
			if err := dec.Decode(&parent); err != nil {
				return last, fmt.Sprintf("parent: %v", err), ptr + "/parent", nil
			}
		case "steps":
			seenHead = true
			if last, err = genesis(tapeID, id, parent); err != nil {
				return last, "", "", err
			}
			if err := expectDelim(dec, '['); err != nil {
				return last, err.Error(), ptr + "/steps", nil
			}
			for si := 0; dec.More(); si++ {
				sp := fmt.Sprintf("%s/steps/%d", ptr, si)
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return last, fmt.Sprintf("not valid JSON: %v", err), sp, nil
				}
				content, d, problem := stepSum(raw)
				switch {
				case problem != "":
					return last, problem, sp, nil
				case d == "" && *anyDigest:
					return last, "step carries no digest", sp, nil
				case d == "":
					if *noDigest == "" {
						*noDigest = sp
					}
					continue
				case *noDigest != "":
					return last, "step carries no digest", *noDigest, nil
				}
				*anyDigest = true
				want, ok := parseSum(d)
				if !ok {
					return last, fmt.Sprintf("digest %q is not sha256:HEX", d), sp + "/digest", nil
				}
				if chain(last, content) != want {
					return last, fmt.Sprintf("the step does not match its digest %s (it, or a step before it in the thread, was changed, moved or removed)", d), sp, nil
				}
				last = want
				v.Steps++
			}
			if _, err := dec.Token(); err != nil {
				return last, fmt.Sprintf("not valid JSON: %v", err), ptr + "/steps", nil
			}
		default:
			return last, fmt.Sprintf("unknown field %q", key), ptr, nil
		}
	}
	if !seenHead {
		return last, "no steps", ptr, nil
	}
	if _, err := dec.Token(); err != nil {
		return last, fmt.Sprintf("not valid JSON: %v", err), ptr, nil
	}
	return last, "", "", nil
}

// stepSum returns the content hash of a step found in a file as raw, and the digest it
// carries ("" for none). The content is the step's compact form, which for a canonical
// step is raw itself, and must end with the digest, where the canonical encoding puts it:
// a tape re-indented by another tool verifies, one whose steps were decoded and encoded
// again differently does not (and encoding/json, which matches field names without
// regard to case, is never asked to judge).
func stepSum(raw []byte) (content sum, digest, problem string) {
	c, ok := compactJSON(make([]byte, 0, len(raw)), raw)
	if !ok {
		return sum{}, "", "not valid JSON"
	}
	body, d, ok := stepContent(c)
	if !ok {
		if !bytes.Contains(c, []byte(`"digest":`)) && !bytes.Contains(bytes.ToLower(c), []byte(`"digest":`)) {
			return sum{}, "", "" // no digest: a tape written without them
		}
		return sum{}, "", "the step's digest is not its last field, where the canonical encoding puts it"
	}
	h := newHash()
	h.Write(body)
	h.Write([]byte("}"))
	return sum(h.Sum(nil)), d, ""
}

// canonicalSum hashes the compact form of raw.
func canonicalSum(raw []byte) (sum, error) {
	c, ok := compactJSON(make([]byte, 0, len(raw)), raw)
	if !ok {
		return sum{}, errors.New("not valid JSON")
	}
	return sum256(c), nil
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, found %v", want, tok)
	}
	return nil
}

// Seal computes t's digests in place, as a Writer with digests would write them: every
// step's link, and t.Digest. A key, when set, signs the root. Use it to give digests to a
// tape built or changed in memory (an import, a test); a tape sealed and then changed no
// longer verifies.
func Seal(t *Tape, key []byte) error {
	if crypt == nil {
		return ErrNoCrypto
	}
	t.normalize()
	t.Digest = nil
	for _, th := range t.Threads {
		for _, s := range th.Steps {
			s.Digest = ""
		}
	}
	metaBytes, err := marshalPiece(&t.Meta)
	if err != nil {
		return fmt.Errorf("seal tape: %w", err)
	}
	lasts := make([]sum, len(t.Threads))
	for i, th := range t.Threads {
		link, err := genesis(t.Meta.TapeID, th.ID, th.Parent)
		if err != nil {
			return fmt.Errorf("seal tape: %w", err)
		}
		for j, s := range th.Steps {
			b, err := MarshalStep(s)
			if err != nil {
				return fmt.Errorf("seal tape: step %d of thread %q: %w", j, th.ID, err)
			}
			link = chain(link, sum256(b))
			s.Digest = formatSum(link)
		}
		lasts[i] = link
	}
	t.Digest = newDigest(sum256(metaBytes), lasts, key)
	return nil
}

func newDigest(meta sum, lasts []sum, key []byte) *Digest {
	root := rootOf(meta, lasts)
	d := &Digest{Algorithm: DigestAlgorithm, Meta: formatSum(meta), Root: formatSum(root)}
	if key != nil {
		d.PublicKey = hex.EncodeToString(crypt.Public(key))
		d.Signature = hex.EncodeToString(crypt.Sign(key, signedMessage(root)))
	}
	return d
}
