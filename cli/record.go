package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
)

func init() {
	register(&command{name: "record", summary: "run an agent command and record its model calls into a tape", run: runRecord})
}

// RecordEnv lists the environment variables record sets for the agent, and why.
var RecordEnv = [][2]string{
	{"ANTHROPIC_BASE_URL", "http://127.0.0.1:PORT (Claude Code, the Anthropic SDKs)"},
	{"OPENAI_BASE_URL", "http://127.0.0.1:PORT/v1 (the OpenAI SDKs; Codex CLI ignores it for its built-in provider: give Codex a custom provider whose base_url is $TAPEBOX_GATEWAY_URL/v1)"},
	{"GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:PORT (Gemini CLI, the Google Gen AI SDKs)"},
	{"TAPEBOX_GATEWAY_URL", "http://127.0.0.1:PORT"},
}

// recordUsage is record's usage line, after "tapebox record".
const recordUsage = "[flags] -- CMD ARGS..."

// recordHelp is record's description in --help.
const recordHelp = `
Records any agent in one command: starts a gateway on a free loopback port, runs CMD with these
variables pointing at it, finishes the tape when CMD exits, and exits with CMD's exit code.

  ANTHROPIC_BASE_URL   http://127.0.0.1:PORT        (Claude Code, the Anthropic SDKs)
  OPENAI_BASE_URL      http://127.0.0.1:PORT/v1     (the OpenAI SDKs)
  GOOGLE_GEMINI_BASE_URL http://127.0.0.1:PORT      (Gemini CLI, the Google Gen AI SDKs)
  TAPEBOX_GATEWAY_URL  http://127.0.0.1:PORT        (for anything else)

Codex CLI ignores OPENAI_BASE_URL for its built-in provider, so when CMD is codex, record also
passes it a provider pointing at the gateway with -c overrides (model_provider="tapebox",
model_providers.tapebox.base_url=.../v1, wire_api="responses", env_key="OPENAI_API_KEY" when
that variable is set): no file to edit. A command that already names a model_provider, and
--no-codex-provider, are left alone. When CMD is opencode, record writes a temporary config
file that points opencode's anthropic and openai providers at the gateway and names it in
OPENCODE_CONFIG (the user's own config is not touched; --no-opencode-provider skips it).
Gemini CLI 0.61 refuses a base URL in headless mode unless its settings select the API key
(security.auth.selectedType "gemini-api-key"), so when CMD is gemini, record runs it with
GEMINI_CLI_HOME set to a temporary directory holding a copy of ~/.gemini/settings.json (and
GEMINI.md) with that selection: the user's own files are not touched, and the copy is removed
when CMD exits. A GEMINI_CLI_HOME already set is left alone. --listen ADDR fixes the address
(default: a free loopback port), for a harness configured by hand. docs/harnesses.md shows
the harnesses side by side.

The tape ends complete when CMD exits 0 after a final answer, cut otherwise, upstream_error when
the provider failed last, budget when a --max-* limit stopped the run: the model call after the
limit was reached got an error in the provider's shape (HTTP 400), and record then exits 3
whatever CMD's exit code. The counters are at $TAPEBOX_GATEWAY_URL/tapebox/status while CMD runs.

Exit codes: CMD's exit code; 3 stopped by the breaker; 1 failure; 2 usage. --harness is detected from the traffic when not given. meta.cwd is
the directory CMD runs in: this one.`

// recordFlags are record's options, parsed from its command line (the flags before CMD).
type recordFlags struct {
	gateway    gatewayFlags // the gateway's flags, as tapebox gateway has them
	json       bool
	listen     string
	noCodex    bool
	noOpenCode bool
}

// runRecord is the record verb: it parses the flags and records CMD.
func runRecord(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "record", recordUsage, recordHelp)
	f := recordFlags{gateway: gatewayFlags{output: "run.json"}}
	f.register(fs)
	if code, done := parseCommand(env, fs, args); done {
		return code
	}
	return f.run(ctx, env, fs)
}

// register defines record's flags on fs, to be parsed into f.
func (f *recordFlags) register(fs *flag.FlagSet) {
	f.gateway.addFlags(fs)
	fs.BoolVar(&f.json, "json", false, "print a JSON summary on stdout when CMD ends (the tape, model calls, end reason, CMD's exit code, the workspace snapshot); CMD's own stdout then goes to stderr")
	fs.BoolVar(&f.gateway.noWorkspace, "no-workspace", false, "do not snapshot the working directory at the start nor record its end manifest")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "address the gateway listens on (port 0: a free one); an address beyond loopback makes it reachable from the network, without authentication")
	fs.BoolVar(&f.noCodex, "no-codex-provider", false, "do not pass Codex the -c overrides of a provider that points at the gateway")
	fs.BoolVar(&f.noOpenCode, "no-opencode-provider", false, "do not give OpenCode the temporary config (OPENCODE_CONFIG) that points its anthropic and openai providers at the gateway")
}

// run starts a gateway, runs CMD (fs.Args()) against it and finishes the tape when CMD
// exits. It returns CMD's exit code, or record's own.
func (f *recordFlags) run(ctx context.Context, env *Env, fs *flag.FlagSet) int {
	gf := &f.gateway
	argv := fs.Args()
	if len(argv) == 0 {
		return usageError(env, fs, "no command to record: tapebox record [flags] -- CMD ARGS...")
	}
	// CMD runs in this directory, so it is meta.cwd whatever CMD's requests say, and the
	// workspace whose start and end the tape carries.
	wd, wdErr := os.Getwd()
	if wdErr == nil {
		gf.workspace = wd
	}
	cfg, err := gf.config(env, "record")
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	if wdErr == nil {
		cfg.Cwd = wd
	} else {
		fmt.Fprintf(env.Stderr, "tapebox record: working directory: %v; meta.cwd is left to what the harness names, and no workspace snapshot is taken\n", wdErr)
		wd = ""
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return failf(env, "record", "%v", err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		g.Finish(tape.EndError, err.Error())
		return failf(env, "record", "listen: %v", err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	base := "http://" + loopbackAddr(ln.Addr())
	argv, launchEnv, cleanup, note, err := harnessLaunch(argv, base, env.Getenv, launchOptions{noCodex: f.noCodex, noOpenCode: f.noOpenCode})
	if err != nil {
		srv.Close()
		g.Finish(tape.EndError, err.Error())
		return failf(env, "record", "%v", err)
	}
	defer cleanup()
	if note != "" {
		fmt.Fprintf(env.Stderr, "tapebox record: %s\n", note)
	}

	cmd := f.command(ctx, env, argv, base, wd, launchEnv)
	fmt.Fprintf(env.Stderr, "tapebox record: gateway on %s, recording into %s\n", base, gf.output)
	code, runErr := commandExitCode(cmd.Run())
	if runErr != nil {
		srv.Close()
		g.Finish(tape.EndError, runErr.Error())
		return failf(env, "record", "run %s: %v", argv[0], runErr)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(shutdownCtx)
	cancel()
	return f.finish(env, g, argv, code, cfg.Cwd)
}

// command is CMD (argv) on the user's terminal, with the variables that point it at the
// gateway on base, the harness's own launchEnv, and PWD=wd unless wd is empty. With --json
// its stdout goes to stderr. The context's end interrupts it.
func (f *recordFlags) command(ctx context.Context, env *Env, argv []string, base, wd string, launchEnv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// The harness is the user's own program, on its own terminal (a TUI draws with escapes).
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, term.Raw(env.Stdout), term.Raw(env.Stderr)
	if f.json {
		cmd.Stdout = env.Stderr // stdout holds only the summary
	}
	cmd.Env = append(os.Environ(),
		"ANTHROPIC_BASE_URL="+base,
		"OPENAI_BASE_URL="+base+"/v1",
		"GOOGLE_GEMINI_BASE_URL="+base,
		"TAPEBOX_GATEWAY_URL="+base,
	)
	if wd != "" {
		// CMD runs here: a harness that trusts $PWD over its working directory (opencode
		// does) must not get the one record's own parent left.
		cmd.Env = append(cmd.Env, "PWD="+wd)
	}
	cmd.Env = append(cmd.Env, launchEnv...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// commandExitCode is the exit code of a command that ran and ended with runErr (128+2 when a
// signal ended it); err is runErr when the command could not run at all.
func commandExitCode(runErr error) (code int, err error) {
	var ee *exec.ExitError
	switch {
	case runErr == nil:
		return 0, nil
	case errors.As(runErr, &ee):
		code = ee.ExitCode()
		if code < 0 {
			code = 128 + 2
		}
		return code, nil
	}
	return 0, runErr
}

// finish ends the tape after CMD (argv) exited with code: its end reason is the gateway's
// outcome, cut when CMD failed after a final answer, budget when the breaker stopped it. It
// prints what was recorded (and with --json the summary) and returns record's exit code.
func (f *recordFlags) finish(env *Env, g *gateway.Gateway, argv []string, code int, cwd string) int {
	output := f.gateway.output
	if p := codexRunProvider(g, argv); p != "" {
		if err := g.SetLabel(interop.LabelCodexModelProvider, p); err != nil {
			fmt.Fprintf(env.Stderr, "tapebox record: %v\n", err)
		}
	}
	reason, detail := g.Outcome()
	if code != 0 && reason == tape.EndComplete {
		reason, detail = tape.EndCut, fmt.Sprintf("%s exited with code %d", argv[0], code)
	}
	if err := g.Finish(reason, detail); err != nil {
		return failf(env, "record", "%v", err)
	}
	fmt.Fprintf(env.Stderr, "tapebox record: %s recorded into %s (%s)\n", plural(g.Steps(), "model call"), output, reason)
	if reason == tape.EndBudget {
		t := g.Tripped()
		fmt.Fprintf(env.Stderr, "tapebox record: stopped by the breaker: %s: %s\n", t.Limit, t.Detail)
		code = ExitBudget
	}
	if f.json {
		sum := recordSummary{Tape: output, ModelCalls: g.Steps(), Ended: string(reason), Detail: detail, ExitCode: code, Cwd: cwd}
		if t, err := tape.LoadFile(output); err == nil && t.Meta.Workspace != nil {
			sum.Workspace = t.Meta.Workspace.Snapshot
			sum.WorkspaceFiles = t.Meta.Workspace.Files
			sum.EndEntries = len(t.Meta.Workspace.End)
		}
		writeJSON(env.Stdout, sum)
	}
	return code
}

// recordSummary is what record --json prints.
type recordSummary struct {
	Tape           string `json:"tape"`
	ModelCalls     int    `json:"model_calls"`
	Ended          string `json:"ended"`
	Detail         string `json:"detail,omitempty"`
	ExitCode       int    `json:"exit_code"`
	Cwd            string `json:"cwd,omitempty"`
	Workspace      string `json:"workspace_snapshot,omitempty"`
	WorkspaceFiles int    `json:"workspace_files"`
	EndEntries     int    `json:"end_entries"`
}

// loopbackAddr is addr as a client on this machine reaches it: a wildcard host (":8080",
// "0.0.0.0:8080") becomes 127.0.0.1.
func loopbackAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// codexRunProvider is the model_provider a recorded Codex run used, which its requests do
// not carry: the one the rollout Codex wrote of the run names ($CODEX_HOME/sessions, by
// default ~/.codex), else the one argv names (record's own -c override, "tapebox", or the
// user's); "" for a run of another harness or when neither says.
func codexRunProvider(g *gateway.Gateway, argv []string) string {
	var codex bool
	var thread string
	g.View(func(tp *tape.Tape) {
		codex = tp.Meta.Harness == "codex"
		if main := tp.Main(); main != nil && len(main.Steps) > 0 {
			thread = interop.CodexThreadID(tp, main)
		}
	})
	if !codex && (len(argv) == 0 || filepath.Base(argv[0]) != "codex") {
		return ""
	}
	home := os.Getenv("CODEX_HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(h, ".codex")
		}
	}
	if p := interop.CodexRolloutProvider(home, thread); p != "" {
		return p
	}
	return argvModelProvider(argv)
}

// argvModelProvider is the model_provider a Codex command line sets with -c
// model_provider=ID (or "ID"), or "".
func argvModelProvider(argv []string) string {
	p := ""
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, "model_provider="); ok {
			p = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return p
}

// codexProvider inserts after argv[0], when it is the Codex CLI, the -c overrides of a
// model provider "tapebox" whose base_url is the gateway's (Codex's built-in provider
// ignores OPENAI_BASE_URL): the Responses wire format, and the API key from
// OPENAI_API_KEY when withKey (a provider whose env_key is unset fails Codex's start). argv is
// returned as it is when it is not codex or already names a model_provider.
func codexProvider(argv []string, base string, withKey bool) []string {
	if len(argv) == 0 || filepath.Base(argv[0]) != "codex" {
		return argv
	}
	for _, a := range argv[1:] {
		if strings.Contains(a, "model_provider") || a == "--oss" {
			return argv
		}
	}
	kv := []string{
		`model_provider="tapebox"`,
		`model_providers.tapebox.name="TapeBox"`,
		`model_providers.tapebox.base_url="` + base + `/v1"`,
		`model_providers.tapebox.wire_api="responses"`,
	}
	if withKey {
		kv = append(kv, `model_providers.tapebox.env_key="OPENAI_API_KEY"`)
	}
	out := []string{argv[0]}
	for _, s := range kv {
		out = append(out, "-c", s)
	}
	return append(out, argv[1:]...)
}

// geminiHome makes a temporary home for Gemini CLI (its GEMINI_CLI_HOME): .gemini/ holds a
// copy of the user's ~/.gemini/settings.json with security.auth.selectedType set to
// "gemini-api-key", which Gemini CLI needs to take GOOGLE_GEMINI_BASE_URL in headless mode,
// and a copy of the user's global GEMINI.md. A settings file that is not plain JSON (Gemini
// CLI allows comments) is replaced by the selection alone.
func geminiHome() (string, error) {
	dir, err := os.MkdirTemp("", "tapebox-gemini-home-")
	if err != nil {
		return "", fmt.Errorf("gemini home: %w", err)
	}
	gem := filepath.Join(dir, ".gemini")
	if err := os.Mkdir(gem, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("gemini home: %w", err)
	}
	settings := map[string]any{}
	if user, err := os.UserHomeDir(); err == nil {
		if b, err := os.ReadFile(filepath.Join(user, ".gemini", "settings.json")); err == nil {
			_ = json.Unmarshal(b, &settings)
		}
		if b, err := os.ReadFile(filepath.Join(user, ".gemini", "GEMINI.md")); err == nil {
			_ = os.WriteFile(filepath.Join(gem, "GEMINI.md"), b, 0o600)
		}
	}
	if settings == nil {
		settings = map[string]any{}
	}
	security, _ := settings["security"].(map[string]any)
	if security == nil {
		security = map[string]any{}
	}
	auth, _ := security["auth"].(map[string]any)
	if auth == nil {
		auth = map[string]any{}
	}
	auth["selectedType"] = "gemini-api-key"
	security["auth"] = auth
	settings["security"] = security
	b, err := json.MarshalIndent(settings, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(gem, "settings.json"), b, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("gemini home: settings: %w", err)
	}
	return dir, nil
}
