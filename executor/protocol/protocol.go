// Package protocol defines the executor protocol, version 1: how the controller (on the
// host) and tapebox-exec (in the sandbox) talk over one byte stream, such as the stdin and
// stdout of "tapebox-exec serve" reached through a Docker exec session, or a connection to
// the controller's unix socket that "tapebox-exec serve --dial unix:PATH" connects to.
//
// Framing: one JSON object per line (UTF-8, "\n" terminated), each with an "op" field.
// Lines longer than MaxLine are rejected with an error message and skipped; the session
// goes on.
//
// Controller to executor:
//
//	{"op":"hello","harness":"claude-code","cwd":"/app","env":{},"state_dir":null,"harness_version":"2.1.332"}
//	{"op":"call","id":"7","call":{ToolCall},"recorded":{ToolResult}|null,"not_offered":true}
//	{"op":"bye"}
//
// Executor to controller:
//
//	{"op":"hello","ok":true,"version":"0.1.0","protocol":1,"harness":"claude-code","cwd":"/app",
//	 "policy":{"parallel_tool_calls":true,"spawning_tools":["Agent","Task"]},
//	 "platform":"linux-6.8.0-x86_64"}
//	{"op":"result","id":"7","result":{ToolResult with duration_ms}}
//	{"op":"bye","ok":true}
//	{"op":"error","id":"7"|null,"message":"..."}
//
// Rules:
//   - hello comes first and sets up the session (harness module, working directory,
//     environment, state directory for background tasks; optionally "tools", the tools the
//     recorded request offered, and "harness_version", the tape's meta.harness_version). state_dir null means a directory
//     in the sandbox's temporary directory named after the user and the absolute cwd
//     ($TMPDIR/tapebox-exec-state-<uid>-<hash>), outside the workspace, which a restarted
//     executor on the same cwd finds again; it is made, mode 0700, only when a task or a
//     saved output needs it, and refused if something else (a symbolic link, another
//     user's directory) is already there. A relative state_dir is relative to cwd. A call
//     before hello gets an error naming the call's id.
//   - Any number of calls may be in flight. Results come back in completion order and are
//     matched by id; a call id must not be reused while its call is in flight (a duplicate
//     gets an error with that id).
//   - call and result carry the tape's own ToolCall and ToolResult records (package tape).
//     recorded is the tape's result for the call; tools whose effect is not in the sandbox
//     replay it verbatim. A tool with no recorded result that needs one gets an error result.
//     not_offered (omitted when false) says the recorded request did not offer the tool.
//     harness_version (omitted when unknown) is the recording's harness version.
//   - A failed tool is a result with is_error true. An error message means the executor
//     could not run the request at all (malformed JSON, unknown op, unknown harness ...);
//     it carries the call's id when one could be read, else null.
//   - bye asks the executor to finish: it answers bye after the calls in flight are done,
//     then exits 0.
package protocol

import (
	"encoding/json"

	"github.com/tapebox/tapebox/tape"
)

// Version is the protocol version this package speaks.
const Version = 1

// Op names a message type.
type Op string

// The message types.
const (
	OpHello  Op = "hello"
	OpCall   Op = "call"
	OpResult Op = "result"
	OpBye    Op = "bye"
	OpError  Op = "error"
)

// Hello opens a session (controller to executor).
type Hello struct {
	Op      Op                `json:"op"`
	Harness string            `json:"harness"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	// StateDir holds background tasks and saved outputs; nil means the default in the
	// sandbox's temporary directory (see the package doc).
	StateDir *string `json:"state_dir"`
	// HarnessVersion is the recording's meta.harness_version, when known: a module words
	// results the way that version does where versions differ.
	HarnessVersion string `json:"harness_version,omitempty"`
}

// Policy is what the controller needs to know of a harness.
type Policy struct {
	// ParallelToolCalls says whether the tool calls of one response run concurrently.
	ParallelToolCalls bool `json:"parallel_tool_calls"`
	// SpawningTools are the tools that start a subagent; their calls never reach the executor.
	SpawningTools []string `json:"spawning_tools"`
}

// HelloReply answers Hello (executor to controller).
type HelloReply struct {
	Op       Op     `json:"op"`
	OK       bool   `json:"ok"`
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	Harness  string `json:"harness"`
	Cwd      string `json:"cwd"`
	Policy   Policy `json:"policy"`
	Platform string `json:"platform"`
}

// Call asks the executor to run one tool call (controller to executor).
type Call struct {
	Op       Op               `json:"op"`
	ID       string           `json:"id"`
	Call     tape.ToolCall    `json:"call"`
	Recorded *tape.ToolResult `json:"recorded"`
	// NotOffered says the recorded request that asked for the call did not offer its tool
	// (its tool list names others): the module answers as its harness answers a tool it
	// does not have, where it knows how.
	NotOffered bool `json:"not_offered,omitempty"`
}

// Result answers a Call (executor to controller).
type Result struct {
	Op     Op              `json:"op"`
	ID     string          `json:"id"`
	Result tape.ToolResult `json:"result"`
}

// Bye ends a session (both directions; the executor's reply has OK set).
type Bye struct {
	Op Op   `json:"op"`
	OK bool `json:"ok,omitempty"`
}

// Error reports a request the executor could not run (executor to controller).
type Error struct {
	Op      Op      `json:"op"`
	ID      *string `json:"id"`
	Message string  `json:"message"`
}

// Envelope is a decoded line: Op says which of the typed fields is set.
type Envelope struct {
	Op         Op
	Hello      *Hello
	HelloReply *HelloReply
	Call       *Call
	Result     *Result
	Bye        *Bye
	Error      *Error
	// Raw is the line as read.
	Raw json.RawMessage
}
