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
// validate: the bytes were checked against the schema before (see Write), so a value is
// skipped with jsonlex.SkipTrusted, four to twenty times as fast as jsonlex.Skip's
// validating scan.
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

// key reads an object key and the colon after it.
func (s *scanner) key() (string, error) {
	if s.peek() != '"' {
		return "", s.errorf("want a string")
	}
	start := s.pos
	end, ok := jsonlex.StringTrusted(s.data, start)
	if s.pos = end; !ok {
		return "", errEnd
	}
	body := s.data[start+1 : end-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body), s.expect(':')
	}
	// an escaped key is rare: check it before decoding it, as the bytes may not be valid
	if _, _, err := jsonlex.String(s.data, start); err != nil {
		return "", fmt.Errorf("key: %w", err)
	}
	return jsonlex.UnquoteString(body), s.expect(':')
}

// value skips one value and returns its span.
func (s *scanner) value() ([]byte, error) {
	start := jsonlex.Space(s.data, s.pos)
	end, ok := jsonlex.SkipTrusted(s.data, start)
	if s.pos = end; !ok {
		if end >= len(s.data) {
			return nil, errEnd
		}
		return nil, s.errorf("unexpected %q", s.data[end])
	}
	return s.data[start:end], nil
}

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
