package cli

import (
	"os"
	"path/filepath"
	"strings"
)

// launchOptions say which of harnessLaunch's set-ups to skip.
type launchOptions struct {
	noCodex, noOpenCode bool
}

// harnessLaunch is the set-up record and fork give a harness command so that it sends its
// model calls to base, beyond the base URL variables every command gets: the Codex CLI's
// -c overrides of a provider (codexProvider), Gemini CLI's temporary GEMINI_CLI_HOME
// (geminiHome; a GEMINI_CLI_HOME already set is left alone), OpenCode's temporary config
// (openCodeEnv). It returns the command line to run, the variables to add, the removal
// of what it made (never nil) and a note for the user ("" when none).
func harnessLaunch(argv []string, base string, getenv func(string) string, o launchOptions) (out, env []string, cleanup func(), note string, err error) {
	out, cleanup = argv, func() {}
	if len(argv) == 0 {
		return out, nil, cleanup, "", nil
	}
	if !o.noCodex {
		out = codexProvider(argv, base, getenv("OPENAI_API_KEY") != "")
	}
	if strings.TrimSuffix(filepath.Base(argv[0]), ".js") == "gemini" && getenv("GEMINI_CLI_HOME") == "" {
		home, err := geminiHome()
		if err != nil {
			return nil, nil, nil, "", err
		}
		env = append(env, "GEMINI_CLI_HOME="+home)
		cleanup = func() { _ = os.RemoveAll(home) }
	}
	if !o.noOpenCode && isOpenCode(argv) {
		ocEnv, ocCleanup, ocNote, err := openCodeEnv(base, getenv)
		if err != nil {
			cleanup()
			return nil, nil, nil, "", err
		}
		env, note = append(env, ocEnv...), ocNote
		prev := cleanup
		cleanup = func() { ocCleanup(); prev() }
	}
	return out, env, cleanup, note, nil
}
