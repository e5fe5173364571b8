package realharness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cmp"
)

// OpenCode names the opencode CLI, as tapes and the executor name it.
const OpenCode = "opencode"

// EnvOpenCode, when set, names the opencode binary to run instead of the installed one.
const EnvOpenCode = "TAPEBOX_OPENCODE"

// OpenCodePath returns the opencode binary: $TAPEBOX_OPENCODE, else the native binary of
// the platform package under harnesses/node_modules (opencode-linux-x64), else the
// package's bin/opencode.exe (the same binary, linked there by its postinstall).
func OpenCodePath() (string, error) {
	return installed(EnvOpenCode, func(nm string) (string, error) {
		var tried []string
		for _, pkg := range platformPackages("opencode-") {
			p := filepath.Join(nm, pkg, "bin", "opencode")
			if _, err := checkExec(p); err == nil && isNative(p) {
				return p, nil
			}
			tried = append(tried, p)
		}
		p := filepath.Join(nm, "opencode-ai", "bin", "opencode.exe")
		if _, err := checkExec(p); err == nil && isNative(p) {
			return p, nil
		}
		tried = append(tried, p)
		return "", fmt.Errorf("realharness: OpenCode not installed (run npm ci in harnesses/); tried %s", strings.Join(tried, ", "))
	})
}

// OpenCodeConfigJSON returns an OpenCode config that points it at a provider: a custom
// provider "fake" on the Anthropic Messages wire format (the AI SDK's @ai-sdk/anthropic,
// built into opencode) at baseURL + "/v1" with the model model ("fake-model" when empty),
// as the default model, with sharing and updates off.
func OpenCodeConfigJSON(baseURL, model string) string {
	model = cmp.Or(model, "fake-model")
	return fmt.Sprintf(`{"$schema":"https://opencode.ai/config.json","model":%q,"autoupdate":false,"share":"disabled",`+
		`"provider":{"fake":{"npm":"@ai-sdk/anthropic","name":"Fake","options":{"baseURL":%q,"apiKey":"sk-test"},`+
		`"models":{%q:{"name":%q,"limit":{"context":200000,"output":4096}}}}}}`,
		"fake/"+model, strings.TrimSuffix(baseURL, "/")+"/v1", model, model)
}

// OpenCodeEnv are the variables RunOpenCode sets beside HOME and OPENCODE_CONFIG: no update
// check, no models.dev fetch (the snapshot in the binary serves), no language server
// download, and npm offline, so the background install of @opencode-ai/plugin into the
// config directory fails at once instead of reaching the registry.
var OpenCodeEnv = []string{
	"OPENCODE_DISABLE_AUTOUPDATE=1",
	"OPENCODE_DISABLE_MODELS_FETCH=1",
	"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
	"OPENCODE_DISABLE_SHARE=1",
	"npm_config_offline=true",
}

// RunOpenCode runs opencode once, non-interactively:
//
//	opencode run --format json PROMPT </dev/null
//
// with HOME=Home, OPENCODE_CONFIG=Home/opencode-test.json holding
// OpenCodeConfigJSON(BaseURL, Model), and OpenCodeEnv. Its session database lands in
// Home/.local/share/opencode. A non-zero exit is reported in the Result.
func RunOpenCode(ctx context.Context, opts Options) (Result, error) {
	return launch(ctx, OpenCodePath, opts, func(home string) (args, env []string, err error) {
		cfg := filepath.Join(home, "opencode-test.json")
		if err := os.WriteFile(cfg, []byte(OpenCodeConfigJSON(opts.BaseURL, opts.Model)), 0o644); err != nil {
			return nil, nil, fmt.Errorf("realharness: opencode config: %w", err)
		}
		env = append([]string{"OPENCODE_CONFIG=" + cfg}, OpenCodeEnv...)
		args = []string{"run", "--format", "json"}
		args = append(args, opts.Args...)
		return append(args, opts.Prompt), env, nil
	})
}
