package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

func init() {
	register(&command{name: "gateway", summary: "record an agent's model calls into a tape (a recording proxy)", run: runGateway})
}

// gatewayFlags are the flags gateway and record share.
type gatewayFlags struct {
	output, upstream, harness string
	task, labels              kvFlag
	inject                    listFlag
	quiet                     bool
	// The workspace snapshot: record takes its own directory unless noWorkspace; gateway
	// takes --workspace DIR.
	workspace        string
	noWorkspace      bool
	wsExclude        listFlag
	wsMax            string
	noDefaultExclude bool
	maxRecordBody    string
	// The breaker and the digests.
	limits     tape.Limits
	pricesFile string
	signKey    string
	noDigests  bool
}

func (gf *gatewayFlags) addFlags(fs *flag.FlagSet) {
	gf.task, gf.labels = kvFlag{}, kvFlag{}
	fs.StringVar(&gf.output, "output", gf.output, "the tape to write (parent directories are created, an existing file is replaced)")
	fs.StringVar(&gf.upstream, "upstream", "", "send every call to this base URL instead of the providers' public hosts (api.anthropic.com, api.openai.com)")
	fs.StringVar(&gf.harness, "harness", "", "the agent's harness (claude-code, codex); detected from the traffic when empty")
	fs.Var(gf.task, "task", "KEY=VALUE describing the task, repeatable (e.g. --task bench=tb4 --task id=hello-world)")
	fs.Var(gf.labels, "label", "KEY=VALUE label for the tape, repeatable")
	fs.Var(&gf.inject, "inject-header", "HOST:NAME=VALUE header the gateway adds to the model calls it records (POST .../v1/messages, /v1/chat/completions, /v1/responses) for upstream HOST, never to other paths; VALUE may be $VAR or env:VAR (repeatable)")
	fs.BoolVar(&gf.quiet, "quiet", false, "no log line per call")
	fs.Var(&gf.wsExclude, "workspace-exclude", "a glob of workspace entries to leave out of the snapshot and the end manifest (repeatable; without a slash it matches a name at any depth, with one a path from the root); added to the defaults "+strings.Join(workspace.DefaultExclude, ", "))
	fs.BoolVar(&gf.noDefaultExclude, "workspace-no-default-exclude", false, "do not leave out "+strings.Join(workspace.DefaultExclude, ", "))
	fs.StringVar(&gf.wsMax, "workspace-max", "256m", "cap on the file content of the workspace snapshot (e.g. 64m, 2g; 0 means no cap): a bigger workspace is an error before the agent starts")
	fs.Float64Var(&gf.limits.MaxCostUSD, "max-cost", 0, "stop the run once its calls cost this many US dollars at the price table's prices (0: no limit); a model without a price counts tokens only, and the gateway says so")
	fs.IntVar(&gf.limits.MaxSteps, "max-steps", 0, "stop the run after this many model calls in all (0: no limit)")
	fs.IntVar(&gf.limits.MaxThreadSteps, "max-thread-steps", 0, "stop the run once one thread (the main agent or a subagent) made this many model calls (0: no limit)")
	fs.Int64Var(&gf.limits.MaxTokens, "max-tokens", 0, "stop the run once its calls used this many tokens: input, output, cache reads and writes (0: no limit)")
	fs.IntVar(&gf.limits.MaxRepeat, "max-repeat", 0, "stop the run once a thread made, K answers in a row, tool calls (same names, same inputs once normalized) it had made before: the polite death spiral (0: no limit)")
	pricesFlag(fs, &gf.pricesFile, "for --max-cost and the status counters")
	fs.StringVar(&gf.signKey, "sign", "", "sign the tape's root digest with this ed25519 private key (a file: 64 hex digits of seed, or 128 of key, or PEM PKCS#8); verify with tapebox verify --key")
	fs.BoolVar(&gf.noDigests, "no-digests", false, "write the tape without its digest chain (tapebox verify then says \"no digests\")")
	fs.StringVar(&gf.maxRecordBody, "max-record-body", "32m", "the largest body recorded (a request, a JSON answer, a stream's events; e.g. 8m, 1g; 0 means no limit): a longer one is forwarded whole, as it arrives, and recorded as a truncation marker")
}

func (gf *gatewayFlags) config(env *Env, verb string) (gateway.Config, error) {
	cfg := gateway.Config{Output: gf.output, Upstream: gf.upstream, Harness: gf.harness, Task: gf.task, Labels: gf.labels}
	maxBody, err := parseBytes(gf.maxRecordBody)
	if err != nil {
		return cfg, fmt.Errorf("--max-record-body: %w", err)
	}
	cfg.MaxRecordBody = maxBody
	if maxBody == 0 {
		cfg.MaxRecordBody = -1
	}
	if err := gf.breaker(env, verb, &cfg); err != nil {
		return cfg, err
	}
	for _, s := range gf.inject {
		inj, err := gateway.ParseInjection(s, env.Getenv)
		if err != nil {
			return cfg, err
		}
		cfg.Inject = append(cfg.Inject, inj)
	}
	if gf.workspace != "" && !gf.noWorkspace {
		max, err := parseBytes(gf.wsMax)
		if err != nil {
			return cfg, fmt.Errorf("--workspace-max: %w", err)
		}
		if max == 0 {
			max = -1
		}
		cfg.Workspace = gf.workspace
		cfg.WorkspaceOptions = workspace.Options{Exclude: gf.wsExclude, NoDefaultExclude: gf.noDefaultExclude, MaxBytes: max}
	}
	if !gf.quiet {
		cfg.Logf = func(format string, args ...any) {
			fmt.Fprintf(env.Stderr, "tapebox %s: %s\n", verb, fmt.Sprintf(format, args...))
		}
	}
	return cfg, nil
}

// defaultListen keeps the gateway off the network unless --listen says otherwise: it has no
// authentication, and with --inject-header it spends a real key for whoever reaches it.
const defaultListen = "127.0.0.1:8080"

// listenWarning is the warning for a gateway listening at addr, or "" on loopback.
func listenWarning(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("listening on %s, beyond loopback, and the gateway has no authentication: anyone who can reach it can send model calls through it (with the keys --inject-header holds)", addr)
}

func runGateway(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "gateway", "--output run.json [--listen 127.0.0.1:8080] [--upstream URL] [flags]", `
Runs a recording reverse proxy. Point the agent's base URL at it (ANTHROPIC_BASE_URL=http://HOST:8080,
an OpenAI base URL of http://HOST:8080/v1); every model call (Anthropic Messages, OpenAI Chat
Completions, OpenAI Responses; streaming or not) is forwarded upstream and recorded into one tape,
persisted after every call. A base URL with a path prefix works: http://HOST:8080/r/LABEL.

It listens on loopback only unless --listen names another address (e.g. --listen :8080 for an
agent in a container). The gateway has no authentication: anyone who can reach it can send
calls through it, with the keys --inject-header holds; it warns when it listens beyond loopback.

The recording ends with "curl -X POST http://HOST:8080/tapebox/end" or SIGINT/SIGTERM; meta.ended
says how (complete, cut, upstream_error, budget). /tapebox/end answers loopback peers; any other
peer must send the end token the gateway prints at start, a new one each run (-H "Authorization:
Bearer TOKEN" or ?token=TOKEN). GET /tapebox/status answers the same peers with the counters as
JSON: steps, tokens, cost, each thread's steps and repeats, the limits and what tripped.

The breaker (--max-cost, --max-steps, --max-thread-steps, --max-tokens, --max-repeat): once a
limit is reached, the next model call and every one after it gets an error in the provider's
shape (HTTP 400, invalid_request_error, naming the limit and the figure), and the tape ends with
reason budget, meta.ended.limit naming the limit. Nothing recorded before is lost.

Every step carries a digest chained per thread and the tape a root digest (tapebox verify checks
them); --sign KEY signs the root.

Credentials are redacted in the tape by name: headers and query parameters whose names hold
key, token, secret, auth, session, cookie, signature or password (a few harmless ones kept).
Bodies are recorded as sent. With --inject-header the gateway holds the real key: the agent gets
a placeholder; on the model calls it records for that host, the gateway drops the agent's
credentials and sets the header itself. Other paths (count_tokens, models, admin APIs) never get
the injected key.`)
	var gf gatewayFlags
	gf.addFlags(fs)
	fs.StringVar(&gf.workspace, "workspace", "", "the agent's working directory on this machine: snapshot it beside the tape before the first call (<stem>.workspace.tar.zst) and record its end manifest when the recording ends, so a replay starts from the same files and compare checks the end state")
	listen := fs.String("listen", defaultListen, "address to listen on; an address beyond loopback (e.g. :8080) makes the gateway reachable from the network, without authentication")
	cwd := fs.String("cwd", "", "the agent's working directory, for meta.cwd (default: the one the harness names in its first request: Claude Code's environment block, Codex's environment context)")
	tf := addTelemetryFlags(fs, true)
	if code, done := parse(env, fs, args); done {
		return code
	}
	if gf.output == "" {
		return usageError(env, fs, "--output is required")
	}
	if fs.NArg() > 0 {
		return usageError(env, fs, "unexpected arguments %q", fs.Args())
	}
	cfg, err := gf.config(env, "gateway")
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	cfg.Cwd = *cwd
	cfg.EndToken = gateway.NewToken()
	ended := make(chan struct{})
	cfg.OnEnd = func() { close(ended) }
	g, err := gateway.New(cfg)
	if err != nil {
		return failf(env, "gateway", "%v", err)
	}
	stopTelemetry, err := tf.start(ctx, env, "", g.StartedAt(), gf.output)
	if err != nil {
		g.Finish(tape.EndError, err.Error())
		return failf(env, "gateway", "%v", err)
	}
	defer stopTelemetry()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		g.Finish(tape.EndError, err.Error())
		return failf(env, "gateway", "listen on %s: %v", *listen, err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(env.Stderr, "tapebox gateway: recording into %s; listening on http://%s (POST /tapebox/end to finish)\n", gf.output, ln.Addr())
	fmt.Fprintf(env.Stderr, "tapebox gateway: end token %s (POST /tapebox/end from beyond loopback needs it: Authorization: Bearer TOKEN or ?token=TOKEN)\n", cfg.EndToken)
	if w := listenWarning(ln.Addr()); w != "" {
		fmt.Fprintf(env.Stderr, "tapebox gateway: warning: %s\n", w)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	stoppedBySignal := false
	select {
	case <-ctx.Done():
		stoppedBySignal = true
	case <-ended:
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			g.Finish(tape.EndError, err.Error())
			return failf(env, "gateway", "serve: %v", err)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdownCtx)
	if stoppedBySignal {
		reason, detail := g.Outcome()
		if err := g.Finish(reason, detail); err != nil {
			return failf(env, "gateway", "%v", err)
		}
	}
	fmt.Fprintf(env.Stderr, "tapebox gateway: %s recorded into %s\n", plural(g.Steps(), "model call"), gf.output)
	return ExitOK
}
