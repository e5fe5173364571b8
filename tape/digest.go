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
	"slices"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// DigestAlgorithm names the digest scheme this package writes: Digest.Algorithm, the
// version of the scheme, kept in the tape so that a tape written with an earlier scheme
// still verifies.
const DigestAlgorithm = "sha256-jcs-chain-2"

// DigestAlgorithmV1 is the first scheme, which hashed each step's compact encoding as it
// was spelled in the file: a tape re-encoded by another tool (Python's json.dump writes
// U+2014 as \u2014) no longer verified. Verify still checks tapes written with it.
const DigestAlgorithmV1 = "sha256-chain-1"

// Digest is a tape's tamper-evidence record, written after its threads.
//
// Each step carries a digest, a link of its thread's chain:
//
//	content(step) = SHA-256(C(the step without its digest member))
//	link(0)       = SHA-256("tapebox chain 2\n" || C([tape_id, thread id, parent]))
//	digest(step)  = SHA-256(link(previous) || content(step))
//
// where C is the canonical form of a JSON value (jsonlex.AppendCanonical: RFC 8785's JCS,
// members sorted by key, one escape form for strings, with numbers kept at their exact
// decimal value), so the digests cover a tape's content, not its spelling: a tape
// re-indented or re-encoded by another tool verifies as long as its values are the same. A
// step's digest binds it to the steps before it, to its thread and to the tape's identity.
// Root binds the rest: SHA-256("tapebox root 2\n" || Meta || each thread's last link, in
// thread order), where Meta is SHA-256(C(meta)). A recorder writes all of it with every
// persisted step, so a recording cut at any moment verifies up to its last step.
// Signature, when present, is an ed25519 signature of "tapebox root 2\n" || Root by the
// key PublicKey names. (Scheme 1, DigestAlgorithmV1, is the same with the compact encoding
// as found in the file for C and "1" for "2".)
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

// sumSize is the size of a SHA-256 sum.
const sumSize = 32

// Hashing is what the digests need from outside package tape, which links no cryptography
// (the sandbox-side executor imports it, and crypto/sha256 alone would cost it 160 KB):
// package tape/seal supplies SHA-256 and ed25519.
type Hashing struct {
	// New returns a SHA-256 hash whose state can be saved (encoding.BinaryMarshaler).
	New func() hash.Hash
	// Sign, when set, signs a root: it returns the signer's public key and the signature.
	Sign func(message []byte) (publicKey, signature []byte)
	// Check reports whether signature is publicKey's over message.
	Check func(publicKey, message, signature []byte) bool
}

func (hs Hashing) sum(b []byte) sum {
	h := hs.New()
	h.Write(b)
	return sum(h.Sum(nil))
}

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

// scheme is a digest scheme's number: 2 (DigestAlgorithm) or 1 (DigestAlgorithmV1).
type scheme int

func schemeOf(algorithm string) scheme {
	switch algorithm {
	case DigestAlgorithm:
		return 2
	case DigestAlgorithmV1:
		return 1
	}
	return 0
}

// canonical is the canonical form of the JSON value b (scheme 2's C).
func canonical(b []byte) ([]byte, error) {
	return jsonlex.Canonical(make([]byte, 0, len(b)), b)
}

// genesis is the link a thread's chain starts from.
func (hs Hashing) genesis(tapeID, threadID string, parent *Parent) (sum, error) {
	return hs.genesisOf(2, tapeID, threadID, parent)
}

func (hs Hashing) genesisOf(sc scheme, tapeID, threadID string, parent *Parent) (sum, error) {
	b, err := marshalPiece([]any{tapeID, threadID, parent})
	if err == nil && sc == 2 {
		b, err = canonical(b)
	}
	if err != nil {
		return sum{}, err
	}
	h := hs.New()
	fmt.Fprintf(h, "tapebox chain %d\n", sc)
	h.Write(b)
	return sum(h.Sum(nil)), nil
}

// chain is the link after prev for a step whose content hash is content.
func (hs Hashing) chain(prev, content sum) sum {
	var b [2 * sumSize]byte
	copy(b[:], prev[:])
	copy(b[sumSize:], content[:])
	return hs.sum(b[:])
}

func rootPrefix(sc scheme) string { return fmt.Sprintf("tapebox root %d\n", sc) }

// rootOf is the root over the meta's hash and the threads' last links.
func (hs Hashing) rootOf(sc scheme, meta sum, lasts []sum) sum {
	h := hs.New()
	h.Write([]byte(rootPrefix(sc)))
	h.Write(meta[:])
	for _, l := range lasts {
		h.Write(l[:])
	}
	return sum(h.Sum(nil))
}

func signedMessage(sc scheme, root sum) []byte { return append([]byte(rootPrefix(sc)), root[:]...) }

// stepDigestLen is the length of how a step's compact encoding ends when it carries a
// digest: ,"digest":"sha256:<64 hex>"}.
func stepDigestLen() int { return len(stepDigestOpen()) + 64 + len(`"}`) }

// stepDigestOpen is ,"digest":"sha256: as the step's digest member starts.
func stepDigestOpen() string {
	layout()
	return "," + stepTable().fields[stepDig].member + `"` + sumPrefix
}

// stepContent returns the canonical encoding of a step without its digest field, given the
// step's encoding as a canonical writer wrote it, and the digest it carries. ok is false
// when raw does not end the way a canonical step with a digest does.
func stepContent(raw []byte) (content []byte, digest string, ok bool) {
	n, open := stepDigestLen(), stepDigestOpen()
	if len(raw) < n {
		return nil, "", false
	}
	tail := raw[len(raw)-n:]
	if !bytes.HasPrefix(tail, []byte(open)) || !bytes.HasSuffix(tail, []byte(`"}`)) {
		return nil, "", false
	}
	d := string(tail[len(open)-len(sumPrefix) : len(tail)-2])
	return raw[:len(raw)-n], d, true // the caller adds the closing brace
}

// stepSorted are the indices of a step's members but its digest, sorted by key: the order
// of C(step), which scheme 2 hashes (initStepLayout).
var stepSorted []int

// stepMembers holds, by field index, a step's member as C(step) writes it after another:
// a comma, the key and the colon (initStepLayout).
var stepMembers [][]byte

// stepHasher hashes a step as the Writer builds it, piece by piece, keeping the hash's
// state after the request and after the response (the first members of C(step)) so that a
// change of a later piece costs that piece only.
type stepHasher struct {
	afterRequest []byte   // sha256 state after {"request": and C(request)
	afterAnswer  []byte   // and after ,"response": and C(response)
	canon        [][]byte // C of each later member's value, by field index; nil when left out
	content      sum
	link         sum
}

// clone copies h, so that a copy's members can change without changing h's.
func (h *stepHasher) clone() *stepHasher {
	layout()
	c := *h
	c.canon = slices.Clone(h.canon)
	if c.canon == nil {
		c.canon = make([][]byte, len(stepTable().fields))
	}
	return &c
}

// setCanon records C of the values of members from..to-1, written at spans of b.
func (h *stepHasher) setCanon(b []byte, spans []span, from, to int) {
	for i := from; i < to; i++ {
		if sp := spans[i]; sp.to > sp.from {
			h.canon[i] = mustCanonical(b[sp.from:sp.to])
		} else {
			h.canon[i] = nil
		}
	}
}

func marshalState(h hash.Hash) []byte {
	b, _ := h.(encoding.BinaryMarshaler).MarshalBinary()
	return b
}

func (hs Hashing) restoreState(state []byte) hash.Hash {
	h := hs.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		panic("tape: restore a sha256 state: " + err.Error()) // the state came from MarshalBinary
	}
	return h
}

// mustCanonical is the canonical form of an encoding this package wrote. Such an encoding
// is valid JSON, but a raw body recorded as received may repeat a key: then it is b itself,
// and the tape, which every reader refuses for the repeated key, does not verify either.
func mustCanonical(b []byte) []byte {
	c, err := canonical(b)
	if err != nil {
		return b
	}
	return c
}

// writeCanonical writes mustCanonical(b) to h without building it: a request or an answer
// holds its raw body, which may be tens of megabytes, and Canonical would hold its form
// and, for each object whose keys are out of order, a second copy.
func writeCanonical(h hash.Hash, b []byte) {
	if jsonlex.WriteCanonical(h, b) != nil {
		h.Write(b) // WriteCanonical wrote nothing
	}
}

// hashRequest starts a step's hash with its request's encoding.
func (hs Hashing) hashRequest(request []byte) []byte {
	layout()
	h := hs.New()
	h.Write([]byte("{"))
	h.Write(stepMembers[stepRequest][1:])
	writeCanonical(h, request)
	return marshalState(h)
}

// hashAnswer continues from the request's state with the response's encoding.
func (hs Hashing) hashAnswer(afterRequest, response []byte) []byte {
	layout()
	h := hs.restoreState(afterRequest)
	h.Write(stepMembers[stepResponse])
	writeCanonical(h, response)
	return marshalState(h)
}

// hashEnd finishes the content hash with the step's other members, canon (C of each
// value by field index, nil for a member left out), in C's order.
func (hs Hashing) hashEnd(afterAnswer []byte, canon [][]byte) sum {
	layout()
	h := hs.restoreState(afterAnswer)
	for _, i := range stepSorted[2:] {
		if canon[i] != nil {
			h.Write(stepMembers[i])
			h.Write(canon[i])
		}
	}
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
	// Hashing supplies SHA-256 and the signature check (package tape/seal).
	Hashing Hashing
	// Key, when set, is the public key the tape must be signed with.
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
// root and the signature. It streams: memory holds one step at a time. It reads the tape
// strictly: a key repeated in any object is a mismatch at its pointer (a reader that took
// the other copy would see another tape than the one verified). Digests of scheme 2 (see
// Digest) cover the content, so a tape re-indented or re-encoded by another tool verifies
// as long as its values are the same; those of scheme 1 the compact encoding as found.
// The error is for data that is not a tape at all; a tape whose digests do not match gives
// a Verification with State DigestsMismatch.
func Verify(r io.Reader, opts VerifyOptions) (*Verification, error) {
	layout()
	hs := opts.Hashing
	if hs.New == nil || hs.Check == nil {
		return nil, errors.New("verify tape: no hashing given (package tape/seal gives it)")
	}
	v := &Verification{State: DigestsOK}
	fail := func(ptr, format string, args ...any) (*Verification, error) {
		v.State, v.Pointer, v.Problem = DigestsMismatch, ptr, fmt.Sprintf(format, args...)
		return v, nil
	}
	sc := &valueScanner{r: r}
	if err := sc.expect('{'); err != nil {
		return nil, fmt.Errorf("verify tape: %w", err)
	}
	var (
		meta     Meta
		metaSums [3]sum // by scheme
		haveMeta bool
		vt       = &verifyThreads{}
		digest   *Digest
		seen     = map[string]bool{}
	)
	for more := !sc.peekIs('}'); more; {
		key, err := sc.key()
		if err != nil {
			return nil, fmt.Errorf("verify tape: %w", err)
		}
		if seen[key] {
			return fail("/"+jsonlex.EscapePointer(key), "the key %q repeats an earlier one: a reader taking either copy would see another tape", key)
		}
		seen[key] = true
		switch key {
		case tapeTable().keys[tapeVersion]:
			raw, _, err := sc.value()
			var n int
			if err != nil || json.Unmarshal(raw, &n) != nil || n != Version {
				return nil, fmt.Errorf("verify tape: version: %w", ErrUnsupportedVersion)
			}
		case tapeTable().keys[tapeMeta]:
			raw, compact, err := sc.value()
			if err != nil {
				return fail("/meta", "not valid JSON: %v", err)
			}
			c, err := canonical(compact)
			if err != nil {
				return failDup("/meta", err, fail)
			}
			if err := strictDecode(raw, &meta); err != nil {
				return fail("/meta", "does not decode: %v", err)
			}
			metaSums[1], metaSums[2], haveMeta = hs.sum(compact), hs.sum(c), true
		case tapeTable().keys[tapeThreads]:
			if !haveMeta {
				return nil, errors.New("verify tape: threads before meta: not a canonical tape")
			}
			if err := sc.expect('['); err != nil {
				return fail("/threads", "%v", err)
			}
			for ti := 0; !sc.peekIs(']'); ti++ {
				if ti > 0 {
					if err := sc.expect(','); err != nil {
						return fail(fmt.Sprintf("/threads/%d", ti-1), "%v", err)
					}
				}
				problem, ptr, err := hs.verifyThread(sc, ti, meta.TapeID, v, vt)
				if err != nil {
					return nil, err
				}
				if problem != "" {
					return fail(ptr, "%s", problem)
				}
			}
			if err := sc.expect(']'); err != nil {
				return fail("/threads", "%v", err)
			}
		case tapeTable().keys[tapeDigest]:
			raw, compact, err := sc.value()
			if err == nil {
				if _, err := canonical(compact); err != nil {
					return failDup("/digest", err, fail)
				}
				err = strictDecode(raw, &digest)
			}
			if err != nil {
				return fail("/digest", "does not decode: %v", err)
			}
		default:
			return fail("", "unknown field %q", key)
		}
		if more = sc.peekIs(','); more {
			sc.expect(',')
		}
	}
	if err := sc.expect('}'); err != nil {
		return nil, fmt.Errorf("verify tape: %w", err)
	}
	return hs.verifyRoot(v, opts, digest, metaSums, vt), nil
}

// verifyRoot finishes Verify once the whole tape is read: the root digest against the
// meta's hash and the threads' last links, then the signature.
func (hs Hashing) verifyRoot(v *Verification, opts VerifyOptions, digest *Digest, metaSums [3]sum, vt *verifyThreads) *Verification {
	fail := func(ptr, format string, args ...any) *Verification {
		v.State, v.Pointer, v.Problem = DigestsMismatch, ptr, fmt.Sprintf(format, args...)
		return v
	}
	if digest == nil {
		if vt.anyDigest {
			return fail("/digest", "steps carry digests but the tape has no root digest")
		}
		v.State = DigestsNone
		if opts.Key != nil {
			return fail("/digest", "no digests, so no signature to check against the key")
		}
		return v
	}
	if vt.noDigest != "" {
		return fail(vt.noDigest, "step carries no digest")
	}
	v.Root = digest.Root
	sch := schemeOf(digest.Algorithm)
	if sch == 0 {
		return fail("/digest/algorithm", "unknown algorithm %q (this build knows %q and %q)", digest.Algorithm, DigestAlgorithm, DigestAlgorithmV1)
	}
	if vt.scheme != 0 && vt.scheme != sch {
		return fail("/digest/algorithm", "the steps' digests are of scheme %d, the tape says %q", vt.scheme, digest.Algorithm)
	}
	if got := formatSum(metaSums[sch]); got != digest.Meta {
		return fail("/meta", "meta hashes to %s, the tape says %s", got, digest.Meta)
	}
	lasts := make([]sum, len(vt.threads))
	for i, th := range vt.threads {
		lasts[i] = th.genesis[sch]
		if th.steps > 0 {
			lasts[i] = th.last
		}
	}
	root := hs.rootOf(sch, metaSums[sch], lasts)
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
			if err != nil || len(b) != 32 {
				return fail("/digest/public_key", "not an ed25519 public key in hex")
			}
			pub = b
		}
		sig, err := hex.DecodeString(digest.Signature)
		if err != nil || !hs.Check(pub, signedMessage(sch, root), sig) {
			return fail("/digest/signature", "the signature does not verify with key %x", []byte(pub))
		}
		v.SignatureOK = true
	}
	return v
}

// failDup reports a repeated key (or invalid JSON) found in the value at ptr.
func failDup(ptr string, err error, fail func(string, string, ...any) (*Verification, error)) (*Verification, error) {
	var de *jsonlex.DuplicateKeyError
	if errors.As(err, &de) {
		return fail(ptr+de.Pointer, "the key %q repeats an earlier one: a reader taking either copy would see another tape", de.Key)
	}
	return fail(ptr, "not valid JSON: %v", err)
}

// verifyThreads is what Verify learns of the threads: each one's chain, and which scheme
// the steps' digests follow (known at the first step with a digest).
type verifyThreads struct {
	threads   []threadChain
	scheme    scheme
	anyDigest bool
	noDigest  string // the pointer of a step without a digest
}

type threadChain struct {
	genesis [3]sum // by scheme
	last    sum    // the last step's link
	steps   int
}

// verifyThread checks one thread's chain, or returns the problem and the pointer of the
// part that does not match.
func (hs Hashing) verifyThread(sc *valueScanner, ti int, tapeID string, v *Verification, vt *verifyThreads) (problem, ptr string, err error) {
	ptr = fmt.Sprintf("/threads/%d", ti)
	if err := sc.expect('{'); err != nil {
		return err.Error(), ptr, nil
	}
	var (
		id       string
		parent   *Parent
		seenHead bool
		seen     = map[string]bool{}
		tc       threadChain
	)
	for more := !sc.peekIs('}'); more; {
		key, err := sc.key()
		if err != nil {
			return fmt.Sprintf("not valid JSON: %v", err), ptr, nil
		}
		if seen[key] {
			return fmt.Sprintf("the key %q repeats an earlier one: a reader taking either copy would see another tape", key), ptr + "/" + jsonlex.EscapePointer(key), nil
		}
		seen[key] = true
		switch key {
		case threadTable().keys[threadID], threadTable().keys[threadParent]:
			if seenHead {
				return fmt.Sprintf("%s after the steps: not a canonical tape", key), ptr + "/" + key, nil
			}
			raw, _, err := sc.value()
			if err == nil && key == threadTable().keys[threadID] {
				err = json.Unmarshal(raw, &id)
			} else if err == nil {
				err = json.Unmarshal(raw, &parent)
			}
			if err != nil {
				return fmt.Sprintf("%s: %v", key, err), ptr + "/" + key, nil
			}
		case threadTable().keys[threadSteps]:
			seenHead = true
			for _, s := range []scheme{1, 2} {
				if tc.genesis[s], err = hs.genesisOf(s, tapeID, id, parent); err != nil {
					return "", "", err
				}
			}
			if problem, at := hs.verifySteps(sc, ptr, &tc, v, vt); problem != "" {
				return problem, at, nil
			}
		default:
			return fmt.Sprintf("unknown field %q", key), ptr, nil
		}
		if more = sc.peekIs(','); more {
			sc.expect(',')
		}
	}
	if !seenHead {
		return "no steps", ptr, nil
	}
	if err := sc.expect('}'); err != nil {
		return fmt.Sprintf("not valid JSON: %v", err), ptr, nil
	}
	vt.threads = append(vt.threads, tc)
	return "", "", nil
}

// verifySteps reads the steps array of the thread at ptr, linking each step that carries a
// digest into tc's chain, or returns the problem and the pointer of the part that does not
// match.
func (hs Hashing) verifySteps(sc *valueScanner, ptr string, tc *threadChain, v *Verification, vt *verifyThreads) (problem, at string) {
	if err := sc.expect('['); err != nil {
		return err.Error(), ptr + "/steps"
	}
	var (
		c []byte
		p jsonlex.Path
	)
	for si := 0; !sc.peekIs(']'); si++ {
		sp := fmt.Sprintf("%s/steps/%d", ptr, si)
		if si > 0 {
			if err := sc.expect(','); err != nil {
				return fmt.Sprintf("not valid JSON after the step: %v", err), fmt.Sprintf("%s/steps/%d", ptr, si-1)
			}
		}
		_, compact, err := sc.value()
		if err != nil {
			return fmt.Sprintf("not valid JSON: %v", err), sp
		}
		c, _, err = jsonlex.AppendCanonical(c[:0], compact, 0, &p)
		if err != nil {
			var de *jsonlex.DuplicateKeyError
			if errors.As(err, &de) {
				return fmt.Sprintf("the key %q repeats an earlier one: a reader taking either copy would see another tape", de.Key), sp + de.Pointer
			}
			return fmt.Sprintf("not valid JSON: %v", err), sp
		}
		linked, problem, at := hs.linkStep(compact, c, sp, tc, vt)
		if problem != "" {
			return problem, at
		}
		if linked {
			v.Steps++
		}
	}
	if err := sc.expect(']'); err != nil {
		return fmt.Sprintf("not valid JSON: %v", err), ptr + "/steps"
	}
	return "", ""
}

// linkStep checks the step at sp (compact as found, c its canonical form) against the
// digest it carries and links it into tc's chain. A step without a digest is not linked
// (linked false), and is a problem only beside steps that carry one; the first step with a
// digest fixes the scheme (vt.scheme) every later one must follow.
func (hs Hashing) linkStep(compact, c []byte, sp string, tc *threadChain, vt *verifyThreads) (linked bool, problem, at string) {
	content2, d, ok := hs.stepSumCanonical(c)
	switch {
	case !ok:
		return false, "the step's digest is not a string", sp + "/digest"
	case d == "" && vt.anyDigest:
		return false, "step carries no digest", sp
	case d == "":
		if vt.noDigest == "" {
			vt.noDigest = sp
		}
		return false, "", ""
	case vt.noDigest != "":
		return false, "step carries no digest", vt.noDigest
	}
	vt.anyDigest = true
	want, ok := parseSum(d)
	if !ok {
		return false, fmt.Sprintf("digest %q is not sha256:HEX", d), sp + "/digest"
	}
	matches := func(s scheme) bool {
		if s == 2 {
			return hs.chain(tc.prev(2), content2) == want
		}
		content1, d1, problem := hs.stepSumCompact(compact)
		return problem == "" && d1 == d && hs.chain(tc.prev(1), content1) == want
	}
	switch {
	case vt.scheme != 0 && matches(vt.scheme):
	case vt.scheme == 0 && matches(2):
		vt.scheme = 2
	case vt.scheme == 0 && matches(1):
		vt.scheme = 1
	default:
		return false, fmt.Sprintf("the step does not match its digest %s (it, or a step before it in the thread, was changed, moved or removed)", d), sp
	}
	tc.last = want
	tc.steps++
	return true, "", ""
}

// prev is the link the next step of the chain follows in scheme s: the last step's, or
// the thread's genesis before its first step.
func (tc *threadChain) prev(s scheme) sum {
	if tc.steps == 0 {
		return tc.genesis[s]
	}
	return tc.last
}

// stepSumCanonical is scheme 2's content hash of a step given its canonical form c, and
// the digest it carries ("" for none): C sorts the digest member first among a step's
// members, and the content is C without it. ok is false when the digest is not a string.
func (hs Hashing) stepSumCanonical(c []byte) (content sum, digest string, ok bool) {
	layout()
	body := c
	if rest, found := bytes.CutPrefix(c, []byte("{"+stepTable().fields[stepDig].member)); found {
		if len(rest) == 0 || rest[0] != '"' {
			return sum{}, "", false
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return sum{}, "", false
		}
		digest = string(rest[1 : 1+end])
		rest = rest[1+end+1:]
		if len(rest) > 0 && rest[0] == ',' {
			rest = rest[1:]
		}
		h := hs.New()
		h.Write([]byte("{"))
		h.Write(rest)
		return sum(h.Sum(nil)), digest, true
	}
	return hs.sum(body), "", true
}

// valueScanner reads a JSON document from r one value at a time, with the tape package's
// compactor (which validates a value and gives its compact form in one pass): it holds the
// value being read and what was read ahead of it, never the whole document.
type valueScanner struct {
	r    io.Reader
	buf  []byte
	pos  int
	eof  bool
	err  error
	out  []byte // the compact form of the last value, reused
	read int64  // bytes consumed before buf
}

// fill reads more of r, dropping what was consumed.
func (sc *valueScanner) fill() bool {
	if sc.eof {
		return false
	}
	if sc.pos > 0 {
		n := copy(sc.buf, sc.buf[sc.pos:])
		sc.read += int64(sc.pos)
		sc.buf, sc.pos = sc.buf[:n], 0
	}
	if len(sc.buf) == cap(sc.buf) {
		sc.buf = append(sc.buf, make([]byte, max(256<<10, cap(sc.buf)))...)[:len(sc.buf)]
	}
	n, err := sc.r.Read(sc.buf[len(sc.buf):cap(sc.buf)])
	sc.buf = sc.buf[:len(sc.buf)+n]
	if err != nil {
		sc.eof = true
		if err != io.EOF {
			sc.err = err
		}
	}
	return n > 0 || !sc.eof
}

// ws skips whitespace, reading more as needed; it reports false at the end of input.
func (sc *valueScanner) ws() bool {
	for {
		if sc.pos = jsonlex.Space(sc.buf, sc.pos); sc.pos < len(sc.buf) {
			return true
		}
		if !sc.fill() {
			return false
		}
	}
}

func (sc *valueScanner) peekIs(b byte) bool {
	return sc.ws() && sc.buf[sc.pos] == b
}

func (sc *valueScanner) expect(b byte) error {
	if !sc.ws() {
		if sc.err != nil {
			return sc.err
		}
		return fmt.Errorf("want %q, found the end of the input", b)
	}
	if c := sc.buf[sc.pos]; c != b {
		return fmt.Errorf("want %q at byte %d, found %q", b, sc.read+int64(sc.pos), c)
	}
	sc.pos++
	return nil
}

// key reads an object key and its colon.
func (sc *valueScanner) key() (string, error) {
	raw, _, err := sc.value()
	if err != nil {
		return "", err
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", fmt.Errorf("object key: %w", err)
	}
	return k, sc.expect(':')
}

// value reads one JSON value and returns it as found and in compact form; both are valid
// until the next call.
func (sc *valueScanner) value() (raw, compact []byte, err error) {
	if !sc.ws() {
		if sc.err != nil {
			return nil, nil, sc.err
		}
		return nil, nil, io.ErrUnexpectedEOF
	}
	for {
		b := sc.buf[sc.pos:]
		out, n, ok := jsonlex.CompactValue(sc.out[:0], b)
		sc.out = out
		// A value that ends where the input read so far ends may go on (a number).
		if ok && (n < len(b) || sc.eof) {
			raw = sc.buf[sc.pos : sc.pos+n]
			sc.pos += n
			return raw, out, nil
		}
		// Until the input ends, a failure may be a value cut by the read (the compactor
		// does not say where it failed): read more and try again.
		if sc.eof {
			if sc.err != nil {
				return nil, nil, sc.err
			}
			return nil, nil, fmt.Errorf("invalid JSON in the value at byte %d", sc.read+int64(sc.pos))
		}
		sc.fill()
	}
}

// stepSum returns the content hash of a step found in a file as raw, and the digest it
// carries ("" for none). The content is the step's compact form, which for a canonical
// step is raw itself, and must end with the digest, where the canonical encoding puts it:
// a tape re-indented by another tool verifies, one whose steps were decoded and encoded
// again differently does not (and encoding/json, which matches field names without
// regard to case, is never asked to judge).
func (hs Hashing) stepSum(raw []byte) (content sum, digest, problem string) {
	c, ok := compactJSON(make([]byte, 0, len(raw)), raw)
	if !ok {
		return sum{}, "", "not valid JSON"
	}
	return hs.stepSumCompact(c)
}

// stepSumCompact is stepSum of a step already in compact form.
func (hs Hashing) stepSumCompact(c []byte) (content sum, digest, problem string) {
	layout()
	body, d, ok := stepContent(c)
	if !ok {
		if !bytes.Contains(bytes.ToLower(c), []byte(stepTable().fields[stepDig].member)) {
			return sum{}, "", "" // no digest: a tape written without them
		}
		return sum{}, "", "the step's digest is not its last field, where the canonical encoding puts it"
	}
	h := hs.New()
	h.Write(body)
	h.Write([]byte("}"))
	return sum(h.Sum(nil)), d, ""
}

func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Seal computes t's digests in place, as a Writer with digests would write them: every
// step's link, and t.Digest. hs.Sign, when set, signs the root. Use it to give digests to a
// tape built or changed in memory (an import, a test); a tape sealed and then changed no
// longer verifies.
func Seal(t *Tape, hs Hashing) error {
	layout()
	t.normalize()
	t.Digest = nil
	for _, th := range t.Threads {
		for _, s := range th.Steps {
			s.Digest = ""
		}
	}
	metaBytes, err := marshalPiece(&t.Meta)
	if err == nil {
		metaBytes, err = canonical(metaBytes)
	}
	if err != nil {
		return fmt.Errorf("seal tape: %w", err)
	}
	lasts := make([]sum, len(t.Threads))
	for i, th := range t.Threads {
		link, err := hs.genesis(t.Meta.TapeID, th.ID, th.Parent)
		if err != nil {
			return fmt.Errorf("seal tape: %w", err)
		}
		for j, s := range th.Steps {
			b, err := MarshalStep(s)
			if err == nil {
				b, err = canonical(b)
			}
			if err != nil {
				return fmt.Errorf("seal tape: step %d of thread %q: %w", j, th.ID, err)
			}
			link = hs.chain(link, hs.sum(b))
			s.Digest = formatSum(link)
		}
		lasts[i] = link
	}
	t.Digest = hs.newDigest(hs.sum(metaBytes), lasts)
	return nil
}

func (hs Hashing) newDigest(meta sum, lasts []sum) *Digest {
	root := hs.rootOf(2, meta, lasts)
	d := &Digest{Algorithm: DigestAlgorithm, Meta: formatSum(meta), Root: formatSum(root)}
	if hs.Sign != nil {
		pub, sig := hs.Sign(signedMessage(2, root))
		d.PublicKey, d.Signature = hex.EncodeToString(pub), hex.EncodeToString(sig)
	}
	return d
}
