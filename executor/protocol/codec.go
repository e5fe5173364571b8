package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// MaxLine is the longest line a Decoder accepts (16 MiB). Longer lines are skipped and
// reported as a *LineError.
const MaxLine = 16 << 20

// Encoder writes messages, one per line. It is safe for concurrent use.
type Encoder struct {
	mu      sync.Mutex
	w       *bufio.Writer
	scratch []byte // the line being encoded (encode.go), under mu
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: bufio.NewWriterSize(w, 64<<10)} }

// Encode writes msg, a Hello, HelloReply, Call, Result, Bye or Error (or a pointer to one),
// as one line and flushes it. A message with a value JSON cannot hold (a NaN duration, a
// raw value that is not JSON) is an error naming the message and the field, and nothing
// is written.
func (e *Encoder) Encode(msg any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	line, err := appendMessage(e.scratch[:0], msg)
	if err != nil {
		return err
	}
	e.scratch = line
	if len(line) > 1<<20 {
		defer func() { e.scratch = nil }() // do not keep a huge line's buffer
	}
	if _, err := e.w.Write(line); err != nil {
		return err
	}
	return e.w.Flush()
}

// LineError is a line the Decoder could not turn into a message. The stream is still
// usable: call Decode again for the next line.
type LineError struct {
	Line int
	// ID is the line's "id" field when it could be read.
	ID  *string
	Err error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ErrUnknownOp is wrapped by the LineError of a line whose op this version does not know.
var ErrUnknownOp = errors.New("unknown op")

// Decoder reads messages, one per line.
type Decoder struct {
	r    *bufio.Reader
	line int
	// replies selects how "hello" and "bye" lines decode: as the executor's replies
	// (controller side) or as requests (executor side).
	replies bool
}

// NewRequestDecoder returns a Decoder for the executor side: it reads hello, call and bye
// requests.
func NewRequestDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10)}
}

// NewReplyDecoder returns a Decoder for the controller side: it reads hello replies,
// results, bye replies and errors.
func NewReplyDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), replies: true}
}

// Decode reads the next message. It returns io.EOF at the end of the stream, a *LineError
// for a line that is not a valid message (the next Decode goes on with the next line), and
// other errors when the stream itself failed.
func (d *Decoder) Decode() (*Envelope, error) {
	for {
		line, tooLong, err := d.readLine()
		if err != nil {
			if err == io.EOF && len(line) > 0 && !tooLong {
				// A last line without "\n" still counts.
			} else if tooLong && err == io.EOF {
				d.line++
				return nil, &LineError{Line: d.line, Err: fmt.Errorf("line longer than %d bytes", MaxLine)}
			} else {
				return nil, err
			}
		}
		d.line++
		if tooLong {
			return nil, &LineError{Line: d.line, Err: fmt.Errorf("line longer than %d bytes", MaxLine)}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if err == io.EOF {
				return nil, io.EOF
			}
			continue
		}
		env, derr := d.parse(line)
		if derr != nil {
			return nil, &LineError{Line: d.line, ID: peekID(line), Err: derr}
		}
		return env, nil
	}
}

// readLine reads one line; a line over MaxLine is consumed to its end and reported with
// tooLong set, without holding it in memory.
func (d *Decoder) readLine() (line []byte, tooLong bool, err error) {
	for {
		frag, ferr := d.r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > MaxLine+1 {
				tooLong = true
				line = nil
			} else {
				line = append(line, frag...)
			}
		}
		switch {
		case ferr == nil:
			return line, tooLong, nil
		case errors.Is(ferr, bufio.ErrBufferFull):
			continue
		default:
			return line, tooLong, ferr
		}
	}
}

func peekID(line []byte) *string {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if jsonlex.Unmarshal(line, &p) != nil || len(p.ID) == 0 {
		return nil
	}
	var s string
	if jsonlex.Unmarshal(p.ID, &s) == nil {
		return &s
	}
	s = string(p.ID) // a number: keep its text
	return &s
}

// leadingOp reads the op of a line that starts with {"op":"NAME", as every Encoder writes
// them, which spares decoding the line twice. Any other line takes the general path.
func leadingOp(line []byte) (Op, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"op":"`))
	if !ok {
		return "", false
	}
	end := bytes.IndexByte(rest, '"')
	if end <= 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return Op(rest[:end]), true
}

func (d *Decoder) parse(line []byte) (*Envelope, error) {
	var head struct {
		Op Op `json:"op"`
	}
	if op, ok := leadingOp(line); ok {
		head.Op = op // the typed decode below checks the whole line
	} else if err := jsonlex.Unmarshal(line, &head); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	env := &Envelope{Op: head.Op, Raw: append(json.RawMessage(nil), line...)}
	var target any
	switch {
	case head.Op == OpHello && d.replies:
		env.HelloReply = &HelloReply{}
		target = env.HelloReply
	case head.Op == OpHello:
		env.Hello = &Hello{}
		target = env.Hello
	case head.Op == OpCall && !d.replies:
		env.Call = &Call{}
		if decodeCall(line, env.Call) {
			return env, env.checkCall()
		}
		*env.Call = Call{}
		target = env.Call
	case head.Op == OpResult && d.replies:
		env.Result = &Result{}
		if decodeResult(line, env.Result) {
			return env, nil
		}
		*env.Result = Result{}
		target = env.Result
	case head.Op == OpBye:
		env.Bye = &Bye{}
		target = env.Bye
	case head.Op == OpError && d.replies:
		env.Error = &Error{}
		target = env.Error
	case head.Op == "":
		return nil, errors.New(`missing "op"`)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownOp, head.Op)
	}
	if err := jsonlex.Unmarshal(line, target); err != nil {
		var se *jsonlex.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("malformed JSON: %w", err)
		}
		return nil, fmt.Errorf("%s message: %w", head.Op, err)
	}
	return env, env.checkCall()
}

// checkCall checks the fields a call needs.
func (env *Envelope) checkCall() error {
	if env.Call == nil {
		return nil
	}
	if env.Call.ID == "" {
		return errors.New(`call without "id"`)
	}
	if env.Call.Call.Name == "" {
		return errors.New(`call without "call.name"`)
	}
	return nil
}
