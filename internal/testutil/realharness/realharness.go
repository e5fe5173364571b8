package realharness

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The harnesses this package runs, named as tapes and the executor name them.
const (
	Claude = "claude-code"
	Codex  = "codex"
	Pi     = "pi"
	Gemini = "gemini-cli"
)

// EnvRequire, set to 1, makes a missing harness a test failure instead of a skip
// (see Required).
const EnvRequire = "TAPEBOX_REQUIRE_HARNESSES"

// EnvClaude and EnvCodex, when set, name the binaries to run instead of the ones installed
// under harnesses/node_modules.
const (
	EnvClaude = "TAPEBOX_CLAUDE"
	EnvCodex  = "TAPEBOX_CODEX"
	EnvPi     = "TAPEBOX_PI"
	EnvGemini = "TAPEBOX_GEMINI"
)

// Options says how to run a harness.
type Options struct {
	// BaseURL is the provider's root, such as http://127.0.0.1:PORT or
	// http://127.0.0.1:PORT/r/label (a path is kept). Claude Code gets it as
	// ANTHROPIC_BASE_URL; Codex gets BaseURL + "/v1" as its provider's base_url.
	BaseURL string
	// Dir is the working directory the harness runs in. Required.
	Dir string
	// Prompt is the task given to the harness.
	Prompt string
	// Home is the harness's home directory (HOME; Codex's CODEX_HOME is Home/.codex). Empty
	// means a temporary directory removed after the run. Claude Code's transcripts land in
	// Home/.claude/projects, Codex's sessions in Home/.codex/sessions.
	Home string
	// Model is the model the harness asks for; empty means each harness's default here
	// (Claude Code's own, "gpt-5.5" for Codex).
	Model string
	// Env holds extra KEY=VALUE variables; they override the ones this package sets.
	Env []string
	// Args are extra arguments, put before the prompt.
	Args []string
	// CodexConfig is TOML appended to Codex's config.toml.
	CodexConfig string
	// Bin, when set, is the harness binary to run instead of the installed default (an
	// older version: see ClaudeOlder).
	Bin string
	// PiAPI is the wire API of Pi's provider (its models.json "api"): "anthropic-messages"
	// (when empty), "openai-completions" or "openai-responses".
	PiAPI string
	// Linger, when above 0, lets what the harness left running (a background job of a
	// command, in the harness's process group or in a session of its own: see Leftovers) go
	// on for up to that long after the harness exits, before it is killed, as it would in a
	// terminal the harness exited from.
	Linger time.Duration
	// Wrap, when set, is a command the harness runs under: Wrap[0] is started with
	// Wrap[1:], then the harness's binary and arguments (setpriv, to run it with the
	// capabilities a sandbox gives the executor).
	Wrap []string
}

// Result is what a run printed and how it ended.
type Result struct {
	// Stdout holds Claude Code's stream-json events or Codex's JSONL events.
	Stdout, Stderr []byte
	// ExitCode is the process's exit status (-1 when it was killed by a signal).
	ExitCode int
	// Duration is the wall time of the run.
	Duration time.Duration
	// Lingered is how long what the harness left running went on after it exited (at most
	// Options.Linger), before it ended or was killed.
	Lingered time.Duration
}

// RunClaude runs Claude Code once, non-interactively:
//
//	claude -p PROMPT --dangerously-skip-permissions --output-format stream-json --verbose
//
// with ANTHROPIC_BASE_URL=BaseURL, ANTHROPIC_API_KEY=sk-test,
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (no calls to the vendor's hosts), IS_SANDBOX=1
// (so root may skip permissions) and HOME=Home. A non-zero exit is reported in the Result,
// not as an error; the error says the harness could not be run or ctx ended.
func RunClaude(ctx context.Context, opts Options) (Result, error) {
	return launch(ctx, ClaudePath, opts, func(string) (args, env []string, err error) {
		env = []string{
			"ANTHROPIC_BASE_URL=" + opts.BaseURL,
			"ANTHROPIC_API_KEY=sk-test",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1",
			"IS_SANDBOX=1",
		}
		args = []string{"--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose"}
		if opts.Model != "" {
			args = append(args, "--model", opts.Model)
		}
		args = append(args, opts.Args...)
		return append(args, "-p", opts.Prompt), env, nil
	})
}

// CodexConfigTOML returns the config.toml that points Codex at a provider: a custom
// provider "fake" on the Responses wire format with retries off, full access, no
// approvals, plugins and analytics off. baseURL is the provider's base_url (with /v1).
func CodexConfigTOML(baseURL, model string) string {
	if model == "" {
		model = "gpt-5.5"
	}
	return fmt.Sprintf(`model = %q
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fake]
name = "fake"
base_url = %q
env_key = "FAKE_OPENAI_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false
`, model, baseURL)
}

// RunCodex runs the Codex CLI once, non-interactively:
//
//	codex exec --skip-git-repo-check --json PROMPT </dev/null
//
// with CODEX_HOME=Home/.codex holding CodexConfigTOML(BaseURL+"/v1", Model) plus
// CodexConfig, and FAKE_OPENAI_KEY=sk-test. A non-zero exit is reported in the Result.
func RunCodex(ctx context.Context, opts Options) (Result, error) {
	return launch(ctx, CodexPath, opts, func(home string) (args, env []string, err error) {
		codexHome := filepath.Join(home, ".codex")
		if err := os.MkdirAll(codexHome, 0o755); err != nil {
			return nil, nil, fmt.Errorf("realharness: codex home: %w", err)
		}
		config := CodexConfigTOML(strings.TrimSuffix(opts.BaseURL, "/")+"/v1", opts.Model)
		if opts.CodexConfig != "" {
			config += "\n" + opts.CodexConfig + "\n"
		}
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
			return nil, nil, fmt.Errorf("realharness: codex config: %w", err)
		}
		env = []string{
			"CODEX_HOME=" + codexHome,
			"FAKE_OPENAI_KEY=sk-test",
			// What the npm wrapper (bin/codex.js) tells the native binary.
			"CODEX_MANAGED_BY_NPM=1",
		}
		if nm, err := nodeModules(); err == nil {
			env = append(env, "CODEX_MANAGED_PACKAGE_ROOT="+filepath.Join(nm, "@openai", "codex"))
		}
		args = []string{"exec", "--skip-git-repo-check", "--json"}
		args = append(args, opts.Args...)
		return append(args, opts.Prompt), env, nil
	})
}

// PiModelsJSON returns the ~/.pi/agent/models.json that points Pi at a provider: a custom
// provider "fake" on wire API api ("anthropic-messages" when empty, "openai-completions",
// "openai-responses") at baseURL (the provider's root: the OpenAI APIs get baseURL + "/v1",
// as their SDK wants it) with the model model ("fake-model" when empty).
func PiModelsJSON(baseURL, api, model string) string {
	api, model = cmp.Or(api, "anthropic-messages"), cmp.Or(model, "fake-model")
	if api != "anthropic-messages" {
		baseURL = strings.TrimSuffix(baseURL, "/") + "/v1"
	}
	return fmt.Sprintf(`{"providers":{"fake":{"baseUrl":%q,"api":%q,"apiKey":"sk-test","models":[{"id":%q,"contextWindow":200000,"maxTokens":4096}]}}}`, baseURL, api, model)
}

// RunPi runs the pi coding agent once, non-interactively:
//
//	pi --provider fake --model MODEL --print --mode json --offline --no-extensions
//	   --no-skills --no-prompt-templates --no-themes --no-context-files
//	   --session-dir Home/sessions PROMPT </dev/null
//
// with PI_CODING_AGENT_DIR=Home/.pi/agent holding PiModelsJSON(BaseURL, PiAPI, Model) and
// PI_OFFLINE=1. Its session file lands in Home/sessions. A non-zero exit is reported in
// the Result.
func RunPi(ctx context.Context, opts Options) (Result, error) {
	return launch(ctx, PiPath, opts, func(home string) (args, env []string, err error) {
		agent := filepath.Join(home, ".pi", "agent")
		if err := os.MkdirAll(agent, 0o755); err != nil {
			return nil, nil, fmt.Errorf("realharness: pi home: %w", err)
		}
		if err := os.WriteFile(filepath.Join(agent, "models.json"), []byte(PiModelsJSON(opts.BaseURL, opts.PiAPI, opts.Model)), 0o644); err != nil {
			return nil, nil, fmt.Errorf("realharness: pi models.json: %w", err)
		}
		env = []string{"PI_CODING_AGENT_DIR=" + agent, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1"}
		args = []string{"--provider", "fake", "--model", cmp.Or(opts.Model, "fake-model"), "--print", "--mode", "json", "--offline",
			"--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes",
			"--session-dir", filepath.Join(home, "sessions")}
		if piKnows(ctx, opts.Bin, "--no-context-files") {
			args = append(args, "--no-context-files") // not in Pi 0.67
		}
		args = append(args, opts.Args...)
		return append(args, opts.Prompt), env, nil
	})
}

// launch finds a harness's binary with path, makes its home (homeDir), and runs it (run)
// with HOME set and the arguments and variables setup returns for that home.
func launch(ctx context.Context, path func() (string, error), opts Options, setup func(home string) (args, env []string, err error)) (Result, error) {
	bin := opts.Bin
	if bin == "" {
		var err error
		if bin, err = path(); err != nil {
			return Result{}, err
		}
	}
	home, cleanup, err := homeDir(opts.Home)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	args, env, err := setup(home)
	if err != nil {
		return Result{}, err
	}
	return run(ctx, bin, args, opts, append([]string{"HOME=" + home}, env...))
}

// homeDir returns home, or a new temporary directory and its removal.
func homeDir(home string) (string, func(), error) {
	if home != "" {
		if err := os.MkdirAll(home, 0o755); err != nil {
			return "", nil, fmt.Errorf("realharness: home: %w", err)
		}
		return home, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "tapebox-harness-home-")
	if err != nil {
		return "", nil, fmt.Errorf("realharness: home: %w", err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// run starts bin in its own process group with a clean environment, waits, and kills the
// group (background commands the harness started included) when it ends or ctx does.
func run(ctx context.Context, bin string, args []string, opts Options, env []string) (Result, error) {
	if opts.Dir == "" {
		return Result{}, errors.New("realharness: Options.Dir is required")
	}
	if opts.BaseURL == "" {
		return Result{}, errors.New("realharness: Options.BaseURL is required")
	}
	if len(opts.Wrap) > 0 {
		args = append(append(append([]string{}, opts.Wrap[1:]...), bin), args...)
		bin = opts.Wrap[0]
	}
	mark, err := newRunMark()
	if err != nil {
		return Result{}, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = opts.Dir
	// PWD too: a harness that trusts it (opencode does) would work where the test runs.
	cmd.Env = append(append(append(append(baseEnv(), "PWD="+opts.Dir), env...), opts.Env...), mark)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Duration: time.Since(start), ExitCode: cmd.ProcessState.ExitCode()}
	if cmd.Process != nil {
		res.Lingered = endLeftovers(cmd.Process.Pid, mark, opts.Linger)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("realharness: %s: %w", filepath.Base(bin), ctx.Err())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return res, fmt.Errorf("realharness: run %s: %w", bin, err)
	}
	return res, nil
}

// baseEnv is the test process's environment without anything that would point a harness
// elsewhere or change its behaviour (credentials, base URLs, a parent Claude Code session).
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "CLAUDECODE", name == "IS_SANDBOX", name == "PWD",
			strings.HasPrefix(name, "OPENCODE"), strings.HasPrefix(name, "XDG_"),
			strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "CLAUDE_"),
			strings.HasPrefix(name, "OPENAI_"), strings.HasPrefix(name, "CODEX_"),
			strings.HasPrefix(name, "AWS_"), strings.HasPrefix(name, "GOOGLE_"), strings.HasPrefix(name, "GEMINI_"),
			strings.HasSuffix(name, "_PROXY"), strings.HasSuffix(name, "_proxy"):
			continue
		}
		env = append(env, kv)
	}
	return env
}

// ClaudePath returns the Claude Code binary: $TAPEBOX_CLAUDE, else the native binary of
// the platform package under harnesses/node_modules, else the package's bin/claude.exe
// (the same binary, copied there by its postinstall).
func ClaudePath() (string, error) {
	return installed(EnvClaude, func(nm string) (string, error) {
		var tried []string
		for _, pkg := range platformPackages("@anthropic-ai/claude-code-") {
			p := filepath.Join(nm, pkg, "claude")
			if _, err := checkExec(p); err == nil {
				return p, nil
			}
			tried = append(tried, p)
		}
		p := filepath.Join(nm, "@anthropic-ai", "claude-code", "bin", "claude.exe")
		if _, err := checkExec(p); err == nil && isNative(p) {
			return p, nil
		}
		tried = append(tried, p)
		return "", fmt.Errorf("realharness: Claude Code not installed (run npm ci in harnesses/); tried %s", strings.Join(tried, ", "))
	})
}

// ClaudeOlder returns the command of an older Claude Code pinned beside the current one in
// harnesses/package.json under the alias claude-code-VERSION (its cli.js, a node script),
// for Options.Bin.
func ClaudeOlder(version string) (string, error) {
	return installed("", func(nm string) (string, error) {
		p := filepath.Join(nm, "claude-code-"+version, "cli.js")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("realharness: Claude Code %s not installed (run npm ci in harnesses/): %w", version, err)
		}
		return p, nil
	})
}

// CodexPath returns the Codex binary: $TAPEBOX_CODEX, else the native binary inside the
// platform package under harnesses/node_modules.
func CodexPath() (string, error) {
	return installed(EnvCodex, func(nm string) (string, error) {
		triple := map[string]string{"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
		arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
		p := filepath.Join(nm, "@openai", "codex-"+runtime.GOOS+"-"+arch, "vendor", triple, "bin", "codex")
		if _, err := checkExec(p); err != nil {
			return "", fmt.Errorf("realharness: Codex not installed (run npm ci in harnesses/): %w", err)
		}
		return p, nil
	})
}

// PiPath returns the pi coding agent's command: $TAPEBOX_PI, else the package's dist/cli.js
// under harnesses/node_modules (a node script with its #! line).
func PiPath() (string, error) {
	return installed(EnvPi, func(nm string) (string, error) {
		p := filepath.Join(nm, "@mariozechner", "pi-coding-agent", "dist", "cli.js")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("realharness: Pi not installed (run npm ci in harnesses/): %w", err)
		}
		return p, nil
	})
}

// GeminiPath returns Gemini CLI's command: $TAPEBOX_GEMINI, else the package's
// bundle/gemini.js under harnesses/node_modules (a node script with its #! line).
func GeminiPath() (string, error) {
	return installed(EnvGemini, func(nm string) (string, error) {
		p := filepath.Join(nm, "@google", "gemini-cli", "bundle", "gemini.js")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("realharness: Gemini CLI not installed (run npm ci in harnesses/): %w", err)
		}
		return p, nil
	})
}

// GeminiSettingsJSON is the ~/.gemini/settings.json RunGemini writes: the API key selected
// as the auth method (Gemini CLI 0.61 refuses GOOGLE_GEMINI_BASE_URL in headless mode
// without it), usage statistics, telemetry, update checks and the IDE off.
const GeminiSettingsJSON = `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"ide":{"enabled":false}}`

// RunGemini runs Gemini CLI once, non-interactively:
//
//	gemini --yolo --output-format json -m MODEL -p PROMPT </dev/null
//
// with GOOGLE_GEMINI_BASE_URL=BaseURL, GEMINI_API_KEY=sk-test, GEMINI_CLI_TRUST_WORKSPACE=true
// (so that --yolo holds in a folder it has not seen) and Home/.gemini/settings.json holding
// GeminiSettingsJSON. MODEL is Options.Model, "gemini-2.5-pro" when empty: a model named
// (not "auto") keeps the CLI from asking a router model first. A non-zero exit is reported
// in the Result.
func RunGemini(ctx context.Context, opts Options) (Result, error) {
	return launch(ctx, GeminiPath, opts, func(home string) (args, env []string, err error) {
		dir := filepath.Join(home, ".gemini")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("realharness: gemini home: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(GeminiSettingsJSON), 0o644); err != nil {
			return nil, nil, fmt.Errorf("realharness: gemini settings: %w", err)
		}
		env = []string{
			"GOOGLE_GEMINI_BASE_URL=" + opts.BaseURL,
			"GEMINI_API_KEY=sk-test",
			"GEMINI_CLI_TRUST_WORKSPACE=true",
			"GEMINI_CLI_NO_RELAUNCH=true",
		}
		args = []string{"--yolo", "--output-format", "json", "-m", cmp.Or(opts.Model, "gemini-2.5-pro")}
		args = append(args, opts.Args...)
		return append(args, "-p", opts.Prompt), env, nil
	})
}

var piHelp struct {
	sync.Mutex
	text map[string]string // by command
}

// piKnows says whether Pi lists option in its --help: the Pi bin names (an older one of
// the version matrix), or the one PiPath names when bin is empty.
func piKnows(ctx context.Context, bin, option string) bool {
	if bin == "" {
		var err error
		if bin, err = PiPath(); err != nil {
			return true
		}
	}
	piHelp.Lock()
	defer piHelp.Unlock()
	if piHelp.text == nil {
		piHelp.text = map[string]string{}
	}
	help, ok := piHelp.text[bin]
	if !ok {
		out, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
		help = string(out)
		piHelp.text[bin] = help
	}
	return help == "" || strings.Contains(help, option+" ") || strings.Contains(help, option+",")
}

// AliasPath returns the command of an older version of a harness installed in
// harnesses/node_modules under an npm alias (package.json: "codex-0.161":
// "npm:@openai/codex@0.161.0"), for the version matrix: set it as $TAPEBOX_CODEX or
// $TAPEBOX_PI.
func AliasPath(harness, alias string) (string, error) {
	nm, err := nodeModules()
	if err != nil {
		return "", err
	}
	var p string
	switch harness {
	case Codex:
		triple := map[string]string{"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
		arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
		p = filepath.Join(nm, alias, "node_modules", "@openai", "codex-"+runtime.GOOS+"-"+arch, "vendor", triple, "bin", "codex")
	case Pi:
		p = filepath.Join(nm, alias, "dist", "cli.js")
	default:
		return "", fmt.Errorf("realharness: no alias path for %s", harness)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("realharness: %s %s not installed (run npm ci in harnesses/): %w", harness, alias, err)
	}
	return p, nil
}

// installed is the binary $env names (which must be executable) when set, else what find
// finds in harnesses/node_modules (nm).
func installed(env string, find func(nm string) (string, error)) (string, error) {
	if p := os.Getenv(env); p != "" {
		return checkExec(p)
	}
	nm, err := nodeModules()
	if err != nil {
		return "", err
	}
	return find(nm)
}

// platformPackages lists the npm platform package names for this machine, glibc first.
func platformPackages(prefix string) []string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	base := prefix + runtime.GOOS + "-" + arch
	return []string{base, base + "-musl"}
}

// isNative says whether p is an ELF binary (not the placeholder stub of a package whose
// postinstall did not run).
func isNative(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := f.Read(magic); err != nil {
		return false
	}
	return string(magic) == "\x7fELF"
}

func checkExec(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// nodeModules finds harnesses/node_modules: walking up from the working directory (go
// test runs in the package's directory), then from this source file's directory.
func nodeModules() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			nm := filepath.Join(dir, "harnesses", "node_modules")
			if st, err := os.Stat(nm); err == nil && st.IsDir() {
				return nm, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("realharness: harnesses/node_modules not found (run npm ci in harnesses/)")
}

// Available says which harnesses are installed; why explains what is missing.
func Available() (claude, codex bool, why string) {
	var reasons []string
	if _, err := ClaudePath(); err != nil {
		reasons = append(reasons, err.Error())
	} else {
		claude = true
	}
	if _, err := CodexPath(); err != nil {
		reasons = append(reasons, err.Error())
	} else {
		codex = true
	}
	return claude, codex, strings.Join(reasons, "; ")
}

// Version returns the installed harness's version ("2.1.332", "0.171.0").
func Version(ctx context.Context, harness string) (string, error) {
	var bin string
	var err error
	switch harness {
	case Claude:
		bin, err = ClaudePath()
	case Codex:
		bin, err = CodexPath()
	case Pi:
		bin, err = PiPath()
	case Gemini:
		bin, err = GeminiPath()
	case OpenCode:
		bin, err = OpenCodePath()
	default:
		return "", fmt.Errorf("realharness: unknown harness %q", harness)
	}
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, "--version")
	if harness == Pi {
		var b bytes.Buffer // Pi prints its version on stderr
		cmd.Stdout, cmd.Stderr = &b, &b
		err = cmd.Run()
		return firstVersion(harness, b.Bytes(), err)
	}
	out, err := cmd.Output()
	return firstVersion(harness, out, err)
}

// firstVersion is the first field of a --version output that starts with a digit.
func firstVersion(harness string, out []byte, err error) (string, error) {
	if err != nil {
		return "", fmt.Errorf("realharness: %s --version: %w", harness, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if f != "" && f[0] >= '0' && f[0] <= '9' {
			return f, nil
		}
	}
	return "", fmt.Errorf("realharness: %s --version: no version in %q", harness, out)
}

// Required reports whether a missing harness must fail the tests ($TAPEBOX_REQUIRE_HARNESSES=1).
func Required() bool { return os.Getenv(EnvRequire) == "1" }
