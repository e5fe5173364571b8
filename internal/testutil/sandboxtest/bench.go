package sandboxtest

import (
	"bufio"
	"context"
	"testing"
	"time"

	"github.com/tapebox/tapebox/executor/protocol"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
)

// NoopCall is a call the executor answers without work: Claude Code's TodoWrite.
var NoopCall = protocol.Call{Op: protocol.OpCall, ID: "1",
	Call:     tape.ToolCall{ID: "toolu_1", Name: "TodoWrite", Input: []byte(`{"todos":[]}`)},
	Recorded: &tape.ToolResult{ToolCallID: "toolu_1", Content: []tape.Block{{Type: tape.BlockText, Text: "Todos have been modified successfully."}}},
}

// Greet says hello to the executor of session s (harness claude-code, working directory
// cwd) and returns the encoder and decoder for the calls that follow; it fails tb unless
// the executor answers.
func Greet(tb testing.TB, s *sandbox.Session, cwd string) (*protocol.Encoder, *protocol.Decoder) {
	tb.Helper()
	enc, dec := protocol.NewEncoder(s.Stdin), protocol.NewReplyDecoder(s.Stdout)
	if err := enc.Encode(protocol.Hello{Op: protocol.OpHello, Harness: "claude-code", Cwd: cwd, Env: map[string]string{}}); err != nil {
		tb.Fatalf("send hello: %v; stderr: %s", err, s.Stderr())
	}
	if env, err := dec.Decode(); err != nil || env.HelloReply == nil {
		tb.Fatalf("hello: %v %s; stderr: %s", err, rawOf(env), s.Stderr())
	}
	return enc, dec
}

// Noop sends NoopCall on a greeted session s and waits for its result, failing tb unless
// one comes.
func Noop(tb testing.TB, s *sandbox.Session, enc *protocol.Encoder, dec *protocol.Decoder) {
	if err := enc.Encode(NoopCall); err != nil {
		tb.Fatalf("send call: %v; stderr: %s", err, s.Stderr())
	}
	if env, err := dec.Decode(); err != nil || env.Result == nil {
		tb.Fatalf("result: %v %s; stderr: %s", err, rawOf(env), s.Stderr())
	}
}

func rawOf(env *protocol.Envelope) string {
	if env == nil {
		return ""
	}
	return string(env.Raw)
}

// Hello is Greet for BenchReady.
func Hello(tb testing.TB, s *sandbox.Session, cwd string) { Greet(tb, s, cwd) }

// BenchEcho times round trips of line (ending in a newline) through a cat in session s.
func BenchEcho(b *testing.B, s *sandbox.Session, line []byte) {
	r := bufio.NewReader(s.Stdout)
	var lat Latencies
	for b.Loop() {
		start := time.Now()
		if _, err := s.Stdin.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		lat.Time(start)
	}
	lat.Report(b)
}

// BenchCat times round trips of line (ending in a newline) through a cat started in sb: the
// floor a session's transport puts under every call.
func BenchCat(b *testing.B, sb *sandbox.Sandbox, line []byte) {
	s, err := sb.StartCommand(b.Context(), []string{"cat"})
	if err != nil {
		b.Fatalf("start cat: %v", err)
	}
	defer s.Close()
	BenchEcho(b, s, line)
}

// BenchNoop times NoopCall round trips through the executor of session s, greeted first
// in cwd.
func BenchNoop(b *testing.B, s *sandbox.Session, cwd string) {
	enc, dec := Greet(b, s, cwd)
	var lat Latencies
	for b.Loop() {
		start := time.Now()
		Noop(b, s, enc, dec)
		lat.Time(start)
	}
	lat.Report(b)
}

// BenchExec times one-shot Execs of argv in sb, each to exit status 0.
func BenchExec(b *testing.B, sb *sandbox.Sandbox, argv ...string) {
	var lat Latencies
	for b.Loop() {
		start := time.Now()
		res, err := sb.Exec(b.Context(), argv)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec %v: %v %+v", argv, err, res)
		}
		lat.Time(start)
	}
	lat.Report(b)
}

// BenchReady times sandboxes made ready for a replay: Open of the spec next returns, Start of
// the executor and greet (Greet, or a stand-in's own check) in the sandbox's Cwd. Close is
// not timed.
func BenchReady(b *testing.B, next func() string, opts sandbox.Options, greet func(testing.TB, *sandbox.Session, string)) {
	var lat Latencies
	for b.Loop() {
		spec := next()
		start := time.Now()
		sb, err := sandbox.Open(b.Context(), spec, opts)
		if err != nil {
			b.Fatal(err)
		}
		s, err := sb.Start(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		greet(b, s, sb.Cwd())
		lat.Time(start)
		b.StopTimer()
		if err := sb.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	lat.Report(b)
}
