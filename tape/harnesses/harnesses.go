package harnesses

// Harness is what TapeBox knows of one agent harness.
type Harness struct {
	// Name is the harness's name in meta.harness and in the executor's hello.
	Name string
	// SpawningTools are the tools that start a subagent (a thread of its own); their calls
	// never reach the executor, the controller plays the child thread. Empty (not nil) for
	// a harness without one, so that the executor's hello lists none.
	SpawningTools []string
	// EndingTools are the tools whose call ends its thread: the harness takes the call's
	// input as the thread's answer and sends the model no results for that answer's calls
	// (Gemini CLI's complete_task, with which a subagent hands back its result). A replay
	// runs the answer's other calls but, where the recording holds no result, writes none
	// either, and sends the ending call itself nowhere.
	EndingTools []string
	// ParallelToolCalls says whether the harness runs the tool calls of one answer at the
	// same time (the executor's default concurrency policy).
	ParallelToolCalls bool
	// Volatile are the parts of tool results that differ on every run; compare masks them.
	Volatile []Volatile
	// Identifiers are the places where the harness puts an identifier it makes up on every
	// run; a value standing there is learned as an identifier without further evidence.
	Identifiers []Identifier
	// CwdLines are the labels of the system prompt line that names the working directory
	// ("Primary working directory: /app"), newest first; CwdElement is the element of an
	// <environment_context> block that does ("<cwd>/app</cwd>"). Either may be empty.
	CwdLines   []string
	CwdElement string
	// CwdList is the label of a list, in the harness's first user message, whose first
	// item is the working directory (Gemini CLI's session context: "- **Workspace
	// Directories:**" then "  - /app" on the next line). Empty for the others.
	CwdList string
	// Checked are the versions the executor's module was checked against (conformance
	// fixtures, internal/fidelity's scoreboard), oldest first. A tape of another version
	// still replays, with one warning naming the nearest (VersionWarning).
	Checked []string
	// Since names behaviours that changed between versions, each with the first version
	// that has it; a module asks Has with the tape's meta.harness_version.
	Since map[string]string
}

// Volatile is a part of a tool result that a harness makes different on every run.
type Volatile struct {
	// Name says what the field is, for reports.
	Name string
	// Expr is a regular expression (RE2) for the field; Replace its placeholder, with $1
	// for groups kept.
	Expr    string
	Replace string
}

// Identifier is a place where a harness writes an identifier it makes up.
type Identifier struct {
	Name string
	// Expr finds the field in a tool result's text; its first group is the identifier.
	Expr string
	// Keys are the JSON fields of tool call inputs that carry the identifier back, where a
	// number is replaced too; strings are replaced wherever an id token stands.
	Keys []string
}

// ClaudeCode is Anthropic's Claude Code (the claude CLI).
var ClaudeCode = Harness{
	Name:              "claude-code",
	SpawningTools:     []string{"Agent", "Task"},
	ParallelToolCalls: true,
	Volatile: []Volatile{
		{Name: "subagent usage footer: agentId", Expr: `agentId: [A-Za-z0-9_\-]+`, Replace: "agentId: <id>"},
		{Name: "subagent usage footer: durations and counts", Expr: `(duration_ms|total_tokens|tool_uses): ?[0-9]+`, Replace: "$1: <n>"},
	},
	Identifiers: []Identifier{
		// run_in_background, or a command moved to the background at its timeout
		{Name: "background shell id", Expr: `(?:Command running in background with ID: |moved to the background \(ID: )([A-Za-z0-9_\-]+)`, Keys: []string{"bash_id", "shell_id", "task_id"}},
		{Name: "background output file", Expr: `Output is being written to: (\S+?)\.?(?:\s|$)`},
		{Name: "task id", Expr: `<task_id>([^<\s]+)</task_id>`, Keys: []string{"task_id"}},
		{Name: "persisted output file", Expr: `Full output saved to: (\S+)`},
		{Name: "agent id", Expr: `agentId: ([A-Za-z0-9_\-]+)`, Keys: []string{"agentId", "agent_id"}},
		{Name: "agent id to continue with SendMessage", Expr: `use SendMessage with to: '([A-Za-z0-9_\-]+)'`},
	},
	CwdLines: []string{"Primary working directory:", "Working directory:"},
	Checked:  []string{"2.0.77", "2.1.332"},
}

// Codex is OpenAI's Codex CLI.
var Codex = Harness{
	Name:              "codex",
	SpawningTools:     []string{"spawn_agent"},
	ParallelToolCalls: true,
	Volatile: []Volatile{
		{Name: "exec_command chunk id", Expr: `Chunk ID: [0-9a-fA-F]+`, Replace: "Chunk ID: <chunk>"},
		{Name: "wall time", Expr: `Wall time: [0-9.]+ seconds`, Replace: "Wall time: <t> seconds"},
		{Name: "shell duration_seconds", Expr: `"duration_seconds":\s*[0-9.]+`, Replace: `"duration_seconds":<t>`},
		// spawn_agent (multi_agent_v1) names each child with a nickname drawn at random
		// ("Noether", "Singer"); its agent_id is an identifier, learned like the others.
		{Name: "spawn_agent nickname", Expr: `"nickname":\s*"[^"\\]*"`, Replace: `"nickname":"<name>"`},
	},
	Identifiers: []Identifier{
		{Name: "exec session id", Expr: `Process running with session ID (\d+)`, Keys: []string{"session_id"}},
		{Name: "agent id", Expr: `"agent_id":\s*"([^"\\]+)"`, Keys: []string{"agent_id"}},
	},
	CwdElement: "cwd",
	Checked:    []string{"0.161.0", "0.171.0"},
	Since: map[string]string{
		// apply_patch ends the lines it adds as the file's first line ends and keeps the
		// ends of context lines; before, every line it rewrote ended in "\n".
		CodexPatchKeepsLineEnds: "0.162.0",
	},
}

// The behaviours of Codex that changed between versions (Codex.Since).
const (
	CodexPatchKeepsLineEnds = "apply_patch keeps line ends"
)

// Pi is the pi coding agent (npm @mariozechner/pi-coding-agent, the pi CLI).
var Pi = Harness{
	Name: "pi",
	// Pi has no subagent tool: its tools are read, bash, edit, write, grep, find and ls.
	SpawningTools: []string{},
	// Pi's agent loop (pi-agent-core's executeToolCalls) runs one answer's tool calls
	// together unless a tool asks for "sequential", which none of Pi's own does; edit and
	// write queue up per file (withFileMutationQueue).
	ParallelToolCalls: true,
	Identifiers: []Identifier{
		// bash keeps an output longer than 2000 lines or 50 KB in a temporary file it names
		// in the truncation note ("Full output: /tmp/pi-bash-<16 hex>.log]"), which the
		// model may read.
		{Name: "bash full output file", Expr: `Full output: (\S+?\.log)\]`},
	},
	// The system prompt's last line: "Current working directory: /app".
	CwdLines: []string{"Current working directory:"},
	Checked:  []string{"0.67.1", "0.73.1"},
	Since: map[string]string{
		// edit of a file it cannot open: "Could not edit file: P. Error code: ENOENT.";
		// before, "File not found: P" (0.70.6 still, 0.71.1 not).
		PiEditErrorCode: "0.71.0",
		// bash formats its whole output; before, the last of the 64 KiB chunks it read
		// while they held more than 100 KB (0.72.1 still).
		PiBashWholeOutput: "0.73.0",
	},
}

// The behaviours of Pi that changed between versions (Pi.Since).
const (
	PiEditErrorCode   = "edit names the error code"
	PiBashWholeOutput = "bash formats the whole output"
)

// Gemini is Google's Gemini CLI (npm @google/gemini-cli, the gemini CLI), which speaks the
// Gemini API (tape.ProviderGemini).
var Gemini = Harness{
	Name: "gemini-cli",
	// invoke_agent runs one of its subagents (codebase_investigator, cli_help ...) in a
	// conversation of its own.
	SpawningTools: []string{"invoke_agent"},
	// A subagent ends with complete_task (LocalAgentExecutor.processFunctionCalls): its
	// input is the subagent's answer, and neither it nor the calls beside it get a result
	// in any request.
	EndingTools: []string{"complete_task"},
	// Its scheduler runs one answer's calls together, except the edit tools (replace,
	// write_file) and update_topic, which wait for the calls before them, and a call whose
	// wait_for_previous is true.
	ParallelToolCalls: true,
	Volatile: []Volatile{
		// run_shell_command ends its output with the process group it ran in.
		{Name: "shell process group", Expr: `Process Group PGID: [0-9]+`, Replace: "Process Group PGID: <pgid>"},
		{Name: "background shell pid", Expr: `Background PIDs: [0-9, ]+`, Replace: "Background PIDs: <pid>"},
	},
	Identifiers: []Identifier{
		// A command sent to the background (is_background) names its process, which
		// read_background_output takes back as "pid".
		{Name: "background process id", Expr: `(?:in background\. PID: |moved to background \(PID: )([0-9]+)`, Keys: []string{"pid"}},
		// A shell result over 40,000 characters is cut; the whole is kept in a file under
		// the project's temporary directory, which the result names.
		{Name: "shell full output file", Expr: `For full output see: (\S+)`},
	},
	CwdList: "- **Workspace Directories:**",
	Checked: []string{"0.61.0"},
}

// OpenCode is the opencode CLI (npm opencode-ai; a compiled Bun program whose tools are
// TypeScript in the binary). It drives the Anthropic and OpenAI wire formats through the
// AI SDK; its requests carry "User-Agent: opencode/VERSION".
var OpenCode = Harness{
	Name: "opencode",
	// task runs a subagent in a child session (the "general" and "explore" agents); its
	// requests carry the header x-parent-session-id.
	SpawningTools: []string{"task"},
	// The AI SDK starts each tool call of a streamed answer as soon as it is complete, so
	// one answer's calls run together.
	ParallelToolCalls: true,
	Identifiers: []Identifier{
		// task answers "<task id=\"ses_...\" state=\"completed\">"; the model resumes the
		// child with task_id.
		{Name: "task session id", Expr: `<task id="(ses_[A-Za-z0-9]+)"`, Keys: []string{"task_id"}},
		// bash keeps an output past its limits in a file under its data directory
		// ("Full output saved to: .../tool-output/tool_..."), which the model may read.
		{Name: "bash full output file", Expr: `Full output saved to: (\S+)`},
	},
	// In the system prompt's <env> block: "  Working directory: /app".
	CwdLines: []string{"Working directory:"},
	Checked:  []string{"1.18.33"},
}

// All lists the harnesses TapeBox knows.
var All = []*Harness{&ClaudeCode, &Codex, &Pi, &Gemini, &OpenCode}

// OtherSpawningTools are spawning tool names of harnesses without an entry (other
// multi-agent tools seen in the wild); the gateway builds the thread tree with them too.
var OtherSpawningTools = []string{"spawn_subagent", "create_agent"}

// Lookup returns the harness called name.
func Lookup(name string) (*Harness, bool) {
	for _, h := range All {
		if h.Name == name {
			return h, true
		}
	}
	return nil, false
}

// SpawningTools lists the spawning tools of every harness and OtherSpawningTools, in table
// order, each once.
func SpawningTools() []string {
	var out []string
	seen := map[string]bool{}
	add := func(names []string) {
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	for _, h := range All {
		add(h.SpawningTools)
	}
	add(OtherSpawningTools)
	return out
}

// VersionWarning returns the warning a replay of a tape recorded with version of harness
// gives when the executor was not checked against that version ("" when it was, when the
// version or the harness is unknown, when the version is no release number, or when the
// table lists no checked version).
func VersionWarning(harness, version string) string {
	h, ok := Lookup(harness)
	if !ok || version == "" || len(h.Checked) == 0 || version[0] < '0' || version[0] > '9' {
		// Not a release of the harness ("hand-built", a tool's own label): there is no
		// version to be near, and nothing to warn about.
		return ""
	}
	nearest, exact := h.Nearest(version)
	if exact {
		return ""
	}
	return "the tape was recorded with " + harness + " " + version + ", which the executor was not checked against; it replays it as the nearest version checked, " + nearest
}
