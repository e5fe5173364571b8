package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
)

func init() {
	register(&command{name: "replay", summary: "play a tape in a fresh sandbox without a model (executor or simulator mode)", run: runReplay})
}

// The sandbox backends restore workspaces and read their manifests.
var _ controller.WorkspaceSandbox = (*sandbox.Sandbox)(nil)

// replayFlags are replay's options, parsed from its command line.
type replayFlags struct {
	tapePath, sandboxSpec, cwd, output string
	cwdGiven                           bool // --cwd was on the command line, even empty
	speed                              float64
	install                            bool
	network, runtime, user             string
	allowNetworkUnenforced             bool
	memory                             string
	cpus                               float64
	pids                               int64
	capAdd                             listFlag
	setFlags                           map[string]bool // given on the command line
	readOnly                           bool
	transport                          string
	callTimeout                        time.Duration
	listen                             string
	quiet                              bool
	noWorkspace                        bool
	check                              bool
	json                               bool
	workspaceDir                       string
	env                                kvFlag
	telemetry                          *telemetryFlags
	allowTampered                      *bool // --allow-tampered
	corpus                             corpusFlags
}

// replayUsage is replay's usage line, after "tapebox replay".
const replayUsage = "--tape run.json (--sandbox SPEC | --listen ADDR) [--output replay.json] [flags]\n       tapebox replay --corpus DIR --sandbox SPEC --journal FILE [--jobs N] [--pool K] [--output-dir DIR] [flags]"

// replayHelp is replay's description in --help.
const replayHelp = `
Executor mode (--sandbox): the controller plays the model (recorded responses, recorded latency
scaled by --speed) and drives tapebox-exec inside the sandbox over one session to run every tool
call. It exits 1, naming the thread and step, if some thread could not be played to its end.

Sandboxes:
  local:DIR            the tape's commands run on this machine in DIR, under bubblewrap (bwrap):
                       DIR is the only host directory they can write; /usr, /bin, /sbin, /lib*,
                       /etc and /opt are read-only and nothing else of the host is there (no home
                       directories or /root, no /var, /run, /srv, /mnt, no host /tmp); no network
                       but their own loopback; their own /tmp and HOME (/tmp/tapebox-home),
                       removed at the end with every process they started; no capabilities; host
                       processes not visible; environment: PATH, HOME, SHELL, USER, LOGNAME, LANG,
                       LC_*, TERM, TZ, then --env, nothing else of yours. Not limited: CPU,
                       memory, number of processes, system calls. Run as root they still own
                       root's files in the read-only directories (/etc's unreadable ones are
                       hidden). Without a working bwrap it runs as unsafe-local:DIR and prints a
                       warning.
  unsafe-local:DIR     the executor runs as a host process in DIR. It isolates NOTHING: the tape's
                       commands read and write your files and use the network with your rights;
                       only the environment is minimal (as above, with your HOME and TMPDIR).
                       For trusted tapes only; it prints a warning.
  local, unsafe-local  the same in a fresh temporary directory, removed at the end (as in testkit)
  docker:NAME          an existing, running container (add --install-executor unless
                       tapebox-exec is on its PATH)
  docker-image:IMAGE   a fresh container from IMAGE, removed at the end; safe defaults: all
                       capabilities dropped, no-new-privileges, no network unless --network,
                       and the limits and user below
  k8s:[CONTEXT/]NAMESPACE?image=IMAGE[&cpu=1&memory=2Gi&pull=IfNotPresent&ready-timeout=2m&node=NAME]
                       a fresh pod on a Kubernetes cluster (kubeconfig from KUBECONFIG,
                       ~/.kube/config or in-cluster, as kubectl), deleted at the end: a
                       numeric non-root user (--user), all capabilities dropped, no privilege
                       escalation, no service account token, no network (a deny-all
                       NetworkPolicy) unless --network, the limits below (cpu=/memory= win);
                       the executor is copied in and the calls travel over one exec stream
                       through the API server (WebSocket, SPDY as fallback). An image that
                       cannot be pulled fails at once, naming the pod's reason

Containers TapeBox creates (docker-image:) run with, unless flags say otherwise:
  --pids-limit 512     processes and threads (stops a fork bomb); 0: unlimited
  --memory 2g          memory, no swap beyond it; 0: unlimited
  --cpus 1             one CPU's worth of time (a CFS quota); 0: unlimited
  --user 65534:65534   nobody, or the image's own USER when it names one other than root
                       (root with --read-only, whose working directory volume is root's).
                       The working directory is made this user's when the image does not
                       have it; a directory of the image keeps its owner (with a warning
                       when that is not the user). --user 0 runs the tape as root.
--network host and --cap-add of a capability that breaks isolation (SYS_ADMIN, SYS_PTRACE,
NET_ADMIN, ALL ...) are accepted with a one-line warning.

Executor transport (--exec-transport): for docker-image: on an engine of this machine (with the
default runtime) the calls travel over a unix socket that the replay listens on, in a host
directory mounted read-only into the container; the executor connects to it and only the
executor's own process is let in. It bypasses the engine (about 0.03 ms a call); elsewhere, and
for docker:NAME, the calls travel over the docker exec session's stream (about 0.1 ms). auto
picks the socket when it can and otherwise falls back to the stream, saying why;
"--exec-transport stream" forces the exec stream, "--exec-transport socket" the socket (an error
where it is impossible). local:DIR uses pipes.
Warnings ("warning: ...", such as a sandbox that is not isolated) are printed even with --quiet.

Working directory: in a container or pod the tool calls run where the recording ran, the tape's
meta.cwd (created when missing), unless --cwd says otherwise; a tape that does not name an
absolute meta.cwd runs in a fresh /workspace (and says so). --cwd "" keeps the container's own,
but a workspace is never restored into, nor compared in, the container's root /. local:DIR
always works in DIR: meta.cwd does not apply there. The replay tape's meta.cwd is the directory
the replay ran in.

Workspace: a tape recorded with its workspace (meta.workspace) names a start snapshot beside it
(<stem>.workspace.tar.zst). It is checked against its digest before anything runs, restored into
the working directory before step 1 (local:DIR must then be empty or missing), and after the last
step the sandbox's end manifest goes into the replay tape, so that compare checks the end state.
--no-workspace skips both.

Simulator mode (--listen): the real harness replays against the recorded responses. With
--workspace DIR (where the harness will run) the start snapshot is restored into DIR first and a
completed run's replay tape gets DIR's end manifest; without it compare cannot check the end
state of a tape that carries one.

Corpus mode (--corpus DIR): every tape of a folder (*.json, recursively; not *.replay.json)
or of an exported dataset (its tapes table is imported once beside the journal) replays in
executor mode, --jobs at a time, each in a fresh sandbox: docker-image:IMAGE, k8s:..., or
local (a fresh directory per tape), with the sandbox flags above. Each replay is compared
with its recording. The journal (--journal FILE, a SQLite database) records every tape's
state: queued, running, done (verdict identical or differs) or failed (with the error). Run
the same command again after a crash or a kill: done and failed tapes are kept, interrupted
ones are redone from scratch in a fresh sandbox. One process at a time holds a journal (a
second one is refused, naming the first one's pid), and a journal made for another corpus is
refused. --pool K makes K sandboxes ready ahead of the replays (each for the tape it will run,
never reused), taking sandbox start-up off the critical path. An engine or API server that
goes away stops the run with the tapes it cut off queued again. At the end the results table
(key, tape_id, state, verdict, steps, executor_restarts, attempts, wall_ms, tool_ms,
sandbox_ready_ms, output, error: why a tape failed, or the first difference of one that
differs) is written as Parquet beside the journal (STEM.results.parquet) and a summary is
printed that names every tape that differs or failed with its first difference or error
(--json: as JSON, "problems"). On a terminal a progress bar shows done, failed, running (at
most --jobs), ready (made ready by --pool), the rate and the ETA. Exit status 1 when a tape
failed, a replay differs (as replay --check) or the run stopped.`

// runReplay is the replay verb: it parses the flags and runs the replay they ask for.
func runReplay(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "replay", replayUsage, replayHelp)
	f := replayFlags{env: kvFlag{}}
	f.register(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	return f.run(ctx, env, fs)
}

// register defines replay's flags on fs, to be parsed into f.
func (f *replayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tapePath, "tape", "", "the recording to replay (required)")
	fs.StringVar(&f.sandboxSpec, "sandbox", "", "where tool calls run: local:DIR, unsafe-local:DIR, docker:NAME, docker-image:IMAGE or k8s:NAMESPACE?image=IMAGE")
	fs.StringVar(&f.cwd, "cwd", "", "working directory inside a container or pod (default: the tape's meta.cwd, else a fresh /workspace; ignored for local:DIR)")
	fs.StringVar(&f.output, "output", "", `write the replay tape here, after every step; "-" (executor mode) prints it on stdout when the replay ends`)
	fs.Float64Var(&f.speed, "speed", 1, "model latency: 1 as recorded, 2 twice as fast, 0 none")
	fs.BoolVar(&f.install, "install-executor", false, "copy tapebox-exec into a docker:NAME container with the Engine API (always done for docker-image: and k8s:)")
	fs.StringVar(&f.network, "network", "", "network of a created container (default none)")
	fs.BoolVar(&f.allowNetworkUnenforced, "allow-network-unenforced", false, "k8s: run without a network even where that cannot be enforced (the deny-all NetworkPolicy cannot be created or differs from TapeBox's, or the cluster does not enforce policies); refused otherwise")
	fs.StringVar(&f.memory, "memory", "2g", "memory limit of a created container (e.g. 512m, 2g; 0: unlimited)")
	fs.Float64Var(&f.cpus, "cpus", sandbox.DefaultCPUs, "CPU limit of a created container (e.g. 1.5; 0: unlimited)")
	fs.Int64Var(&f.pids, "pids-limit", sandbox.DefaultPidsLimit, "process limit of a created container (0: unlimited)")
	fs.StringVar(&f.user, "user", "", "UID[:GID] or NAME[:GROUP] a created container runs the tape as (default: the image's USER unless root, else "+sandbox.DefaultUser+")")
	fs.Var(&f.capAdd, "cap-add", "give a created container a capability back (repeatable; all are dropped by default)")
	fs.BoolVar(&f.readOnly, "read-only", false, "read-only root for a created container (workdir and /tmp stay writable)")
	fs.StringVar(&f.runtime, "runtime", "", "OCI runtime of a created container (e.g. runsc)")
	fs.StringVar(&f.transport, "exec-transport", "auto", "how calls reach the executor: auto, stream (the docker exec stream) or socket (a unix socket, docker-image: only)")
	fs.DurationVar(&f.callTimeout, "call-timeout", 10*time.Minute, "per tool call; a call that takes longer gets an error result and the replay goes on")
	fs.Var(f.env, "env", "KEY=VALUE for the executor's environment, repeatable")
	fs.StringVar(&f.listen, "listen", "", "simulator mode: serve the provider's API on this address")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines (on a terminal, a progress line shows the steps done, the thread and the tool)")
	fs.BoolVar(&f.json, "json", false, "executor mode: print a JSON summary on stdout when the replay ends (steps, tool calls, times, restarts; compare's report with --check)")
	fs.BoolVar(&f.check, "check", false, "compare the replay with the recording when it ends (tool results and end state), print compare's report, and exit 1 when it differs: one command for CI")
	fs.StringVar(&f.workspaceDir, "workspace", "", "simulator mode: the directory the harness works in (empty or missing): the tape's start snapshot is restored there first, and each completed run's end manifest is read from it")
	fs.BoolVar(&f.noWorkspace, "no-workspace", false, "do not restore the tape's start snapshot (meta.workspace) and take no end manifest: the replay starts from the sandbox as it is")
	f.telemetry = addTelemetryFlags(fs, true)
	f.corpus.add(fs)
	f.allowTampered = allowTamperedFlag(fs)
}

// run checks the parsed flags and replays: a corpus, in the simulator (--listen) or in a
// sandbox (executor mode). It returns the exit code.
func (f *replayFlags) run(ctx context.Context, env *Env, fs *flag.FlagSet) int {
	f.setFlags = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.setFlags[fl.Name] = true })
	f.cwdGiven = f.setFlags["cwd"]
	if f.corpus.dir != "" || f.setFlags["jobs"] || f.setFlags["journal"] || f.setFlags["pool"] || f.setFlags["output-dir"] {
		return runCorpus(ctx, env, fs, f)
	}
	if fi, err := os.Stat(f.tapePath); err == nil && fi.IsDir() {
		return usageError(env, fs, "--tape %s is a directory: replay every tape in it with --corpus %s --journal FILE", f.tapePath, f.tapePath)
	}
	if f.tapePath == "" {
		return usageError(env, fs, "--tape is required")
	}
	if f.speed < 0 {
		return usageError(env, fs, "--speed must be 0 or more")
	}
	if (f.sandboxSpec == "") == (f.listen == "") {
		return usageError(env, fs, "give exactly one of --sandbox (executor mode) or --listen (simulator mode)")
	}
	rec, code := loadTapeToAct(env, "replay", f.tapePath, *f.allowTampered)
	if rec == nil {
		return code
	}
	if err := unsupported.Check(rec); err != nil { // both modes; replay.Open checks too
		return failf(env, "replay", "%s: %v", f.tapePath, term.Printable(err.Error()))
	}
	if f.output == "-" && (f.listen != "" || f.json || f.check) {
		return usageError(env, fs, `--output - prints the replay tape on stdout: it goes with neither --listen, --json nor --check, which print there too`)
	}
	if f.listen != "" {
		return runSimulator(ctx, env, fs.Name(), rec, f)
	}
	return runExecutorReplay(ctx, env, rec, f)
}

// loadValidTape reads a tape and checks it against the schema, printing every problem.
func loadValidTape(env *Env, verb, path string) (*tape.Tape, int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, failf(env, verb, "%v", err)
	}
	return decodeValidTape(env, verb, path, data)
}

// decodeValidTape checks a tape's bytes against the schema, printing every problem with its
// JSON pointer, and decodes them.
func decodeValidTape(env *Env, verb, path string, data []byte) (*tape.Tape, int) {
	if code := checkValidTape(env, verb, path, data); code != ExitOK {
		return nil, code
	}
	t, err := tape.Unmarshal(data)
	if err != nil {
		return nil, failf(env, verb, "%s: %v", path, err)
	}
	return t, ExitOK
}

// checkValidTape checks a tape's bytes against the schema, printing every problem with its
// JSON pointer as validate does; it returns ExitOK for a valid tape.
func checkValidTape(env *Env, verb, path string, data []byte) int {
	if err := schema.Validate(data); err != nil {
		var ve *schema.ValidationError
		if errors.As(err, &ve) {
			for _, p := range ve.Problems {
				fmt.Fprintf(env.Stderr, "%s: %s: %s\n", path, p.Pointer, p.Message)
			}
			return failf(env, verb, "%s is not a valid tape (%s); run \"tapebox validate %s\"", path, plural(len(ve.Problems), "problem"), path)
		}
		return failf(env, verb, "%s: %v", path, err)
	}
	return ExitOK
}

func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	l := strings.ToLower(s)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}} {
		if strings.HasSuffix(l, u.suffix) || strings.HasSuffix(l, u.suffix+"b") {
			mult = u.m
			l = strings.TrimSuffix(strings.TrimSuffix(l, "b"), u.suffix)
			break
		}
	}
	var n int64
	if _, err := fmt.Sscan(l, &n); err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 512m or 2g)", s)
	}
	return n * mult, nil
}

// logger prints replay's lines to stderr: every line, or with --quiet the warnings only.
func (f *replayFlags) logger(env *Env) func(format string, args ...any) {
	return func(format string, args ...any) {
		if !f.quiet || strings.HasPrefix(format, "warning: ") {
			fmt.Fprintf(env.Stderr, "tapebox replay: %s\n", fmt.Sprintf(format, args...))
		}
	}
}

// memoryLimit parses --memory and checks --cpus and --pids-limit, the sandbox limits.
func (f *replayFlags) memoryLimit() (int64, error) {
	mem, err := parseBytes(f.memory)
	if err != nil {
		return 0, fmt.Errorf("--memory: %w", err)
	}
	if f.cpus < 0 || f.pids < 0 {
		return 0, errors.New("--cpus and --pids-limit must not be negative (0: unlimited)")
	}
	return mem, nil
}

// cliLimit turns a limit flag (0: unlimited) into an Options limit (0: the default,
// negative: unlimited).
func cliLimit[T int64 | float64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

func runExecutorReplay(ctx context.Context, env *Env, rec *tape.Tape, f *replayFlags) int {
	logf := f.logger(env)
	sopts, err := f.sandboxOptions(env, f.sandboxSpec)
	if err != nil {
		return failf(env, "replay", "%v", err)
	}
	toStdout := f.output == "-"
	if toStdout {
		f.output = ""
	}
	opts := replay.Options{TapePath: f.tapePath, Sandbox: sopts, Cwd: f.cwd, CwdSet: f.cwdGiven, Env: f.env,
		Speed: f.speed, Output: f.output, CallTimeout: f.callTimeout, NoWorkspace: f.noWorkspace, Compare: f.check, Logf: logf,
		Opened: func(sb *sandbox.Sandbox) (func(), error) {
			return f.telemetry.start(ctx, env, sb.ContainerID(), time.Now(), f.output)
		}}
	prog := newStatusLine(env.Stderr, f.quiet, 100*time.Millisecond)
	if prog != nil {
		opts.Progress = func(pr controller.Progress) { prog.draw(replayLine(pr), pr.Done == pr.Total) }
	}
	res, err := replay.Run(ctx, rec, f.sandboxSpec, opts)
	prog.clear()
	if res == nil {
		if errors.Is(err, sandbox.ErrBadSpec) {
			fmt.Fprintf(env.Stderr, "tapebox replay: %v\nRun \"tapebox replay --help\" for usage.\n", err)
			return ExitUsage
		}
		if f.json {
			// Nothing ran (the tape could not be played): the summary still says why.
			writeJSON(env.Stdout, replaySummary{Tape: f.tapePath, Output: f.output, Sandbox: f.sandboxSpec, Error: err.Error()})
		}
		return failf(env, "replay", "%v", err)
	}
	sum := replaySummary{Tape: f.tapePath, Output: f.output, Sandbox: res.Spec, Cwd: res.Cwd, Transport: res.Transport}
	if res.Tape != nil {
		logf("%d steps, %d tool calls in %v (tools %v, model pacing %v), %d executor restarts, %d identifiers learned",
			res.Steps, res.ToolCalls, res.Wall.Round(time.Millisecond), res.ToolTime.Round(time.Millisecond),
			res.ModelTime.Round(time.Millisecond), res.Restarts, len(res.Identifiers))
		sum.fill(res)
	}
	sum.Compare = res.Report
	code := ExitOK
	if err != nil {
		sum.Error = err.Error()
		code = ExitFailure
	} else if res.Report != nil && !res.Report.Identical {
		code = ExitFailure
	}
	switch {
	case toStdout && res.Tape != nil:
		if data, merr := tape.Marshal(res.Tape); merr == nil {
			env.Stdout.Write(append(data, '\n'))
		}
	case f.json:
		writeJSON(env.Stdout, sum)
	case res.Report != nil:
		res.Report.WriteText(env.Stdout)
	}
	if err != nil {
		msg := err.Error()
		if f.output != "" {
			msg += fmt.Sprintf(" (the replay tape so far is in %s)", f.output)
		}
		return failf(env, "replay", "%s", msg)
	}
	if f.output != "" && !f.check {
		logf("replay tape written to %s; compare with: tapebox compare %s %s", f.output, f.tapePath, f.output)
	}
	return code
}

// sandboxOptions are the sandbox flags as replay.Options.Sandbox for spec. The limits have
// defaults for the containers TapeBox creates (0 on the command line: unlimited); elsewhere
// only a limit given on the command line reaches Open, which refuses it.
func (f *replayFlags) sandboxOptions(env *Env, spec string) (sandbox.Options, error) {
	mem, err := f.memoryLimit()
	if err != nil {
		return sandbox.Options{}, err
	}
	transport, err := sandbox.ParseTransport(f.transport)
	if err != nil {
		return sandbox.Options{}, fmt.Errorf("--exec-transport: %w", err)
	}
	o := sandbox.Options{InstallExecutor: f.install, Env: f.env, Network: f.network, User: f.user,
		ReadOnlyRoot: f.readOnly, Runtime: f.runtime, CapAdd: f.capAdd, Transport: transport, AllowNetworkUnenforced: f.allowNetworkUnenforced,
		// Warnings are printed even with --quiet.
		Warnf: func(format string, args ...any) {
			fmt.Fprintf(env.Stderr, "tapebox replay: %s\n", fmt.Sprintf(format, args...))
		}}
	created := strings.HasPrefix(spec, sandbox.SchemeDockerImage+":")
	if created || f.setFlags["memory"] {
		o.Memory = cliLimit(mem)
	}
	if created || f.setFlags["cpus"] {
		o.CPUs = cliLimit(f.cpus)
	}
	if created || f.setFlags["pids-limit"] {
		o.PidsLimit = cliLimit(f.pids)
	}
	return o, nil
}

// replaySummary is what replay --json prints: where and how the replay ran, what it did, and
// with --check compare's report.
type replaySummary struct {
	Tape        string          `json:"tape"`
	Output      string          `json:"output,omitempty"`
	Sandbox     string          `json:"sandbox"`
	Cwd         string          `json:"cwd"`
	Transport   string          `json:"transport"`
	Ended       string          `json:"ended"`
	Steps       int             `json:"steps"`
	ToolCalls   int             `json:"tool_calls"`
	Restarts    int             `json:"executor_restarts"`
	WallMS      float64         `json:"wall_ms"`
	ToolMS      float64         `json:"tool_ms"`
	ModelMS     float64         `json:"model_pacing_ms"`
	RestoreMS   float64         `json:"workspace_restore_ms"`
	ManifestMS  float64         `json:"workspace_manifest_ms"`
	SetupMS     float64         `json:"sandbox_setup_ms"`
	FirstMS     float64         `json:"first_result_ms"`
	Identifiers int             `json:"identifiers_learned"`
	Compare     *compare.Report `json:"compare,omitempty"`
	Error       string          `json:"error,omitempty"`
}

func (s *replaySummary) fill(res *replay.Result) {
	ms := func(d time.Duration) float64 { return tape.RoundMS(d) }
	s.Steps, s.ToolCalls, s.Restarts, s.Identifiers = res.Steps, res.ToolCalls, res.Restarts, len(res.Identifiers)
	s.WallMS, s.ToolMS, s.ModelMS = ms(res.Wall), ms(res.ToolTime), ms(res.ModelTime)
	s.RestoreMS, s.ManifestMS = ms(res.RestoreTime), ms(res.ManifestTime)
	s.SetupMS, s.FirstMS = ms(res.Setup), ms(res.Setup+res.FirstResult)
	if res.Tape != nil && res.Tape.Meta.Ended != nil {
		s.Ended = string(res.Tape.Meta.Ended.Reason)
	}
}
