package bigbody

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Filler is the text the large answers repeat.
const Filler = "All work and no play makes a long answer. "

// Upstream answers an Anthropic call with the body its X-Answer header asks for (Answer's
// kind and size: "json SIZE", "sse SIZE", "sse-one-event SIZE"; anything else a short
// message), generated as it is written in 32 KiB pieces and flushed, so without a length
// unless the request has an X-Answer-Length header. It remembers the SHA-256 of the last
// answer it wrote and of the last request body it read, before the answer's last piece
// goes out.
type Upstream struct {
	mu         sync.Mutex
	sent, read string
}

func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	if _, err := io.Copy(h, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	read := hex.EncodeToString(h.Sum(nil))
	kind, sizeText, _ := strings.Cut(r.Header.Get("X-Answer"), " ")
	size, _ := strconv.Atoi(sizeText)
	body := Answer(kind, size)
	if r.Header.Get("X-Answer-Length") != "" {
		n, _ := io.Copy(io.Discard, Answer(kind, size))
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(kind, "sse") {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	h = sha256.New()
	buf := make([]byte, 32<<10)
	rc := http.NewResponseController(w)
	write := func(p []byte) bool {
		if _, err := w.Write(p); err != nil {
			return false
		}
		rc.Flush()
		return true
	}
	// Each piece goes out once the next is read, and the last once the hashes are stored: a
	// client that has read the whole answer finds them (with a Content-Length it has its
	// last byte before this handler returns, and may ask before the handler runs again).
	var last []byte
	for {
		n, err := body.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if len(last) > 0 && !write(last) {
				return
			}
			last = append(last[:0], buf[:n]...)
		}
		if err != nil {
			break
		}
	}
	u.mu.Lock()
	u.sent, u.read = hex.EncodeToString(h.Sum(nil)), read
	u.mu.Unlock()
	write(last)
}

// Hashes returns the hex SHA-256 of the last answer written and of the last request body
// read.
func (u *Upstream) Hashes() (sent, read string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sent, u.read
}

// Answer generates an Anthropic answer of about size bytes: for kind "json" a message whose
// text is Filler repeated, for "sse" a stream of text deltas of it, for "sse-one-event" a
// stream whose one text delta holds it all; any other kind is a short message.
func Answer(kind string, size int) io.Reader {
	switch kind {
	case "json":
		head := `{"id":"msg_big","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"`
		tail := `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":34}}`
		return io.MultiReader(strings.NewReader(head), Repeat(Filler, size/len(Filler)), strings.NewReader(tail))
	case "sse":
		head := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_big\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		delta := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + Filler + "\"}}\n\n"
		tail := "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":34}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		return io.MultiReader(strings.NewReader(head), Repeat(delta, size/len(delta)), strings.NewReader(tail))
	case "sse-one-event":
		head := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_big\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""
		tail := "\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		return io.MultiReader(strings.NewReader(head), Repeat(Filler, size/len(Filler)), strings.NewReader(tail))
	}
	return strings.NewReader(`{"id":"msg_small","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}`)
}

// Request is an Anthropic request whose one user message holds about size bytes.
func Request(size int, stream bool) io.Reader {
	const text = "Please read all of this carefully. "
	head := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"`, stream)
	return io.MultiReader(strings.NewReader(head), Repeat(text, size/len(text)), strings.NewReader(`"}]}`))
}

// Repeat yields s n times.
func Repeat(s string, n int) io.Reader {
	return io.LimitReader(&cycle{s: s}, int64(len(s)*n))
}

type cycle struct {
	s   string
	off int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.s[c.off:])
		n += k
		c.off = (c.off + k) % len(c.s)
	}
	return n, nil
}

// Hashing hashes and counts what is read through it.
type Hashing struct {
	r     io.Reader
	h     hash.Hash
	count int64
}

// NewHashing reads r through a SHA-256.
func NewHashing(r io.Reader) *Hashing { return &Hashing{r: r, h: sha256.New()} }

func (h *Hashing) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.count += int64(n)
	return n, err
}

// Sum is the hex SHA-256 of what has been read.
func (h *Hashing) Sum() string { return hex.EncodeToString(h.h.Sum(nil)) }

// Count is how many bytes have been read.
func (h *Hashing) Count() int64 { return h.count }
