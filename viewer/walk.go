package viewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// scanner finds the spans of values in a tape's bytes without decoding them: one pass that
// looks only at structure, so that the steps can then be decoded on every core. It does not
// validate: the bytes were checked against the schema before (see Write), and a string is
// skipped with bytes.IndexByte, about four times as fast as jsonlex.Skip's validating scan.
type scanner struct {
	data []byte
	pos  int
}

var errEnd = errors.New("unexpected end of JSON")

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

// peek returns the next byte that is not white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.pos = jsonlex.Space(s.data, s.pos)
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.pos >= len(s.data) {
			return errEnd
		}
		return s.errorf("want %q, got %q", c, s.data[s.pos])
	}
	s.pos++
	return nil
}

// str skips a string starting at pos and returns its span, quotes included.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errorf("want a string")
	}
	start := s.pos
	i := s.pos + 1
	for {
		j := bytes.IndexByte(s.data[i:], '"')
		if j < 0 {
			s.pos = len(s.data)
			return nil, errEnd
		}
		i += j
		// the quote ends the string unless an odd number of backslashes precede it
		k := i - 1
		for k > start && s.data[k] == '\\' {
			k--
		}
		i++
		if (i-2-k)%2 == 0 {
			break
		}
	}
	s.pos = i
	return s.data[start:i], nil
}

// key reads an object key and the colon after it.
func (s *scanner) key() (string, error) {
	raw, err := s.str()
	if err != nil {
		return "", err
	}
	var k string
	if bytes.IndexByte(raw, '\\') < 0 {
		k = string(raw[1 : len(raw)-1])
	} else if err := json.Unmarshal(raw, &k); err != nil {
		return "", s.errorf("key: %v", err)
	}
	return k, s.expect(':')
}

// value skips one value and returns its span.
func (s *scanner) value() ([]byte, error) {
	s.pos = jsonlex.Space(s.data, s.pos)
	start := s.pos
	depth := 0
	for {
		if s.pos >= len(s.data) {
			return nil, errEnd
		}
		c := s.data[s.pos]
		switch {
		case c == '"':
			if _, err := s.str(); err != nil {
				return nil, err
			}
		case c == '{' || c == '[':
			depth++
			s.pos++
		case c == '}' || c == ']':
			depth--
			if depth < 0 {
				return nil, s.errorf("unexpected %q", c)
			}
			s.pos++
		case depth > 0 && (c == ',' || c == ':' || isSpace(c)):
			s.pos++
		default: // a number, true, false or null
			j := s.pos
			for j < len(s.data) && !isDelim(s.data[j]) {
				j++
			}
			if j == s.pos {
				return nil, s.errorf("unexpected %q", c)
			}
			s.pos = j
		}
		if depth == 0 {
			return s.data[start:s.pos], nil
		}
	}
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '[', '}', ']', '"':
		return true
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// members calls fn for each member of the object at pos; fn must consume the value.
func (s *scanner) members(fn func(key string) error) error {
	return s.list('{', '}', func(int) error {
		k, err := s.key()
		if err != nil {
			return err
		}
		return fn(k)
	})
}

// items calls fn for each item of the array at pos; fn must consume the item.
func (s *scanner) items(fn func(i int) error) error {
	return s.list('[', ']', fn)
}

// list reads the object or array at pos, from open to closing, calling each for its i-th
// element; each must consume the element.
func (s *scanner) list(open, closing byte, each func(i int) error) error {
	if err := s.expect(open); err != nil {
		return err
	}
	if s.peek() == closing {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := each(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case closing:
			s.pos++
			return nil
		case 0:
			return errEnd
		default:
			return s.errorf("want ',' or %q", closing)
		}
	}
}

// decodeSteps decodes the steps at spans on every core and hands them to fn in order.
func decodeSteps(spans [][]byte, fn func(i int, ws *wireStep) error) error {
	type result struct {
		ws  *wireStep
		err error
	}
	outs := make([]chan result, len(spans))
	for i := range outs {
		outs[i] = make(chan result, 1)
	}
	window := make(chan struct{}, 4*runtime.GOMAXPROCS(0))
	stop, produced := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	go func() {
		defer close(produced)
		for i, span := range spans {
			select {
			case window <- struct{}{}:
			case <-stop:
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ws := new(wireStep)
				err := json.Unmarshal(span, ws)
				outs[i] <- result{ws, err}
			}()
		}
	}()
	defer func() {
		close(stop)
		<-produced // every wg.Add is done
		wg.Wait()
	}()
	for i := range spans {
		r := <-outs[i]
		<-window
		if r.err != nil {
			return fmt.Errorf("steps/%d: %w", i, r.err)
		}
		if err := fn(i, r.ws); err != nil {
			return fmt.Errorf("steps/%d: %w", i, err)
		}
	}
	return nil
}
