package tape

import "testing"

// benchHeaders are the headers of a Claude Code request and of an Anthropic answer, as the
// gateway records them on every call.
var benchHeaders = []map[string][]string{
	{
		"Accept": {"application/json"}, "Anthropic-Beta": {"claude-code-20250219,interleaved-thinking-2025-05-14"},
		"Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}, "Content-Length": {"40213"},
		"User-Agent": {"claude-cli/2.1.332 (external, sdk-cli)"}, "X-Api-Key": {"sk-ant-api03-bench"}, "X-App": {"cli"},
		"X-Claude-Code-Session-Id": {"80e11c7d-1b7e-4c43-9a51-0e1b9a0f6f1a"}, "X-Stainless-Arch": {"x64"},
		"X-Stainless-Lang": {"js"}, "X-Stainless-Os": {"Linux"}, "X-Stainless-Package-Version": {"0.60.0"},
		"X-Stainless-Retry-Count": {"0"}, "X-Stainless-Runtime": {"node"}, "X-Stainless-Runtime-Version": {"v22.12.0"},
		"X-Stainless-Timeout": {"600"}, "Accept-Encoding": {"gzip, deflate, br, zstd"}, "Connection": {"keep-alive"},
	},
	{
		"Content-Type": {"text/event-stream; charset=utf-8"}, "Request-Id": {"req_011CUbench"}, "Cf-Ray": {"9a1b2c3d4e5f-LHR"},
		"Anthropic-Ratelimit-Input-Tokens-Limit": {"2000000"}, "Anthropic-Ratelimit-Input-Tokens-Remaining": {"1999000"},
		"Anthropic-Ratelimit-Output-Tokens-Limit": {"400000"}, "Anthropic-Organization-Id": {"org-bench"},
		"Via": {"1.1 google"}, "Server": {"cloudflare"}, "Date": {"Mon, 01 Jan 2026 00:00:00 GMT"},
	},
}

// BenchmarkRedactHeaders is the gateway's header redaction for one call: its request's and
// its answer's headers.
func BenchmarkRedactHeaders(b *testing.B) {
	for b.Loop() {
		for _, h := range benchHeaders {
			RedactHeaders(h)
		}
	}
}
