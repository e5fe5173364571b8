package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/sandbox/telemetry"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/viewer"
)

func init() {
	register(&command{name: "view", summary: "write one self-contained HTML page that shows a tape (and a replay beside it)", run: runView})
}

func runView(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "view", "[-o run.html] [--telemetry CSV] [--open] [--serve ADDR] TAPE [REPLAY]", `
Writes one HTML page that shows TAPE: its threads as lanes (a subagent's lane linked to the tool
call that spawned it), every step on a timeline to scale (waiting for the first byte, streaming,
the tool gap to the next request; wheel to zoom, drag to pan), and a step's new messages,
response text and thinking, tool calls with their inputs and results, usage, cost and chunk
arrival times when it is selected. With REPLAY (a replay or a fork of TAPE) the page shows it
beside the recording and highlights what "tapebox compare TAPE REPLAY" finds: differing tool
results as an inline diff, the first difference, the end-state differences. Telemetry (CPU and
memory) is drawn on the same clock from --telemetry CSV or from <stem>.telemetry.csv beside TAPE.
Search covers tool names, inputs and results; j and k step through the steps; the URL fragment
names the selected step (#step=THREAD/N).

The page works offline from disk: its code and styles are in the tapebox binary, the tapes'
data is in the page, compressed, and it loads nothing from the network. Tape text is shown as
text, never as markup. Without -o the page is written beside TAPE as <stem>.html and its path
printed. An invalid tape is reported as "tapebox validate" reports it, and no page is written.
--serve ADDR serves the page at http://ADDR/ instead (a bare port means 127.0.0.1:PORT) until
interrupted. Exits 0 when the page was written, 1 on an invalid or unreadable input.`)
	out := fs.String("o", "", "write the page to this file (default: <stem>.html beside TAPE)")
	telemetryCSV := fs.String("telemetry", "", "telemetry CSV to draw (default: <stem>.telemetry.csv beside TAPE, when it exists)")
	open := fs.Bool("open", false, "open the page in the desktop's browser (xdg-open, open, or $BROWSER)")
	serve := fs.String("serve", "", "serve the page on ADDR (e.g. 127.0.0.1:8090 or 8090) instead of only writing it")
	var pricesFile string
	pricesFlag(fs, &pricesFile, "for the costs")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError(env, fs, "want a tape, and optionally a replay of it")
	}
	table, err := loadPrices(pricesFile)
	if err != nil {
		return failf(env, "view", "%v", err)
	}
	o := viewer.Options{Prices: table}
	recPath := fs.Arg(0)
	rec, code := readValidTape(env, recPath)
	if rec == nil {
		return code
	}
	o.Recording = viewer.Source{Path: recPath, Data: rec}
	if fs.NArg() == 2 {
		repPath := fs.Arg(1)
		rep, code := readValidTape(env, repPath)
		if rep == nil {
			return code
		}
		o.Replay = &viewer.Source{Path: repPath, Data: rep}
		report, code := compareBytes(env, recPath, rec, repPath, rep)
		if report == nil {
			return code
		}
		o.Report = report
	}
	stem := strings.TrimSuffix(recPath, filepath.Ext(recPath))
	tpath, explicit := *telemetryCSV, *telemetryCSV != ""
	if !explicit {
		tpath = telemetryPath(recPath)
	}
	if f, err := os.Open(tpath); err == nil {
		samples, err := telemetry.ReadCSV(f)
		f.Close()
		if err != nil {
			return failf(env, "view", "%s: %v", tpath, err)
		}
		o.Telemetry, o.TelemetryPath = samples, tpath
	} else if explicit || !errors.Is(err, iofs.ErrNotExist) {
		return failf(env, "view", "%v", err)
	}

	if *serve != "" {
		return serveView(ctx, env, *serve, *out, *open, o)
	}
	dst := *out
	if dst == "" {
		dst = stem + ".html"
	}
	if err := writePage(ctx, dst, o); err != nil {
		return failf(env, "view", "%v", err)
	}
	fmt.Fprintln(env.Stdout, dst)
	if *open {
		if err := openInBrowser(env, dst); err != nil {
			return failf(env, "view", "%v", err)
		}
	}
	return ExitOK
}

// readValidTape reads a tape and checks it against the schema, printing its problems as
// validate does.
func readValidTape(env *Env, path string) ([]byte, int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, failf(env, "view", "%v", err)
	}
	if code := checkValidTape(env, "view", path, data); code != ExitOK {
		return nil, code
	}
	return data, ExitOK
}

// compareBytes runs compare on two valid tapes, reading their normalized fields only.
func compareBytes(env *Env, recPath string, rec []byte, repPath string, rep []byte) (*compare.Report, int) {
	load := func(path string, data []byte) (*tape.Tape, error) {
		stripped, err := tape.StripBodies(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		t, err := tape.Unmarshal(stripped)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return t, nil
	}
	a, err := load(recPath, rec)
	if err != nil {
		return nil, failf(env, "view", "%v", err)
	}
	b, err := load(repPath, rep)
	if err != nil {
		return nil, failf(env, "view", "%v", err)
	}
	return compare.Compare(a, b), ExitOK
}

// writePage writes the page to path atomically (tape.CreateAtomic), so a reader never
// sees half a page and a failed write leaves no page.
func writePage(ctx context.Context, path string, o viewer.Options) error {
	f, err := tape.CreateAtomic(path, 0o644)
	if err != nil {
		return fmt.Errorf("write page %s: %w", path, err)
	}
	defer f.Close()
	if err := viewer.Write(ctx, f, o); err != nil {
		return fmt.Errorf("write page %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("write page %s: %w", path, err)
	}
	return nil
}

// serveView serves the page at / on addr until ctx ends; with out set it also writes it there.
func serveView(ctx context.Context, env *Env, addr, out string, open bool, o viewer.Options) int {
	if !strings.Contains(addr, ":") {
		addr = "127.0.0.1:" + addr
	}
	var page bytes.Buffer
	if err := viewer.Write(ctx, &page, o); err != nil {
		return failf(env, "view", "%v", err)
	}
	if out != "" {
		if err := writePage(ctx, out, o); err != nil {
			return failf(env, "view", "%v", err)
		}
		fmt.Fprintln(env.Stdout, out)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return failf(env, "view", "serve: %v", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		fmt.Fprintf(env.Stderr, "tapebox view: warning: serving on %s, beyond loopback: anyone who can reach it can read the tape\n", ln.Addr())
	}
	body := page.Bytes()
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Cache-Control", "no-store")
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		}),
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(env.Stdout, "serving %s at %s\n", o.Recording.Path, url)
	if open {
		if err := openInBrowser(env, url); err != nil {
			fmt.Fprintf(env.Stderr, "tapebox view: %v\n", err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		return ExitOK
	case err := <-errc:
		return failf(env, "view", "serve: %v", err)
	}
}

// openInBrowser opens target (a file or a URL) with $BROWSER, xdg-open or open.
func openInBrowser(env *Env, target string) error {
	var cmd *exec.Cmd
	switch b := env.Getenv("BROWSER"); {
	case b != "":
		cmd = exec.Command(b, target)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", target)
	default:
		cmd = exec.Command("xdg-open", target)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("open %s: %w (set $BROWSER, or open the file yourself)", target, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
