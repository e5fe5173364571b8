package secrets

import (
	"slices"

	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/regexp"
)

// URLCredentialsRule is the ID of the rule that finds a password in a URL's user
// information: postgres://app:PASSWORD@db/prod, https://user:TOKEN@github.com/org/repo
// (as git prints a remote), redis://:PASSWORD@cache. gitleaks has no such rule.
const URLCredentialsRule = "url-credentials"

// extraRules are the rules this package adds to gitleaks' set, for what its rules miss:
// passwords in URLs, and the keys of services whose format is distinctive enough to be
// found without a name beside it but which gitleaks finds only under one (a New Relic or
// Telegram key as a bare value) or not at all (the formats as TruffleHog's detectors
// describe them: Docker Hub, Discord webhooks, Groq, xAI, Supabase).
func extraRules() []config.Rule {
	token := func(id, desc, expr string, keywords ...string) config.Rule {
		return config.Rule{
			RuleID: id, Description: desc, Regex: regexp.MustCompile(expr), Keywords: keywords, Entropy: 3,
		}
	}
	return append([]config.Rule{
		token("dockerhub-pat", "A Docker Hub personal or organisation access token.",
			`\b(dckr_(?:pat_[A-Za-z0-9_-]{27}|oat_[A-Za-z0-9_-]{32}))(?:[^A-Za-z0-9_-]|$)`, "dckr_pat_", "dckr_oat_"),
		token("discord-webhook", "A Discord webhook URL, which lets anyone post to the channel.",
			`(https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,80})`, "discord"),
		token("groq-api-key", "A Groq API key.", `\b(gsk_[A-Za-z0-9]{52})\b`, "gsk_"),
		token("xai-api-key", "An xAI API key.", `\b(xai-[A-Za-z0-9_]{80})\b`, "xai-"),
		token("supabase-access-token", "A Supabase personal access token.", `\b(sbp_[a-z0-9]{40})\b`, "sbp_"),
		token("new-relic-user-key", "A New Relic user API key, without a name beside it.", `\b(NRAK-[A-Z0-9]{27})\b`, "nrak-"),
		token("telegram-bot-token", "A Telegram bot token, without a name beside it.", `\b([0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)`, ":aa"),
	}, config.Rule{
		RuleID:      URLCredentialsRule,
		Description: "A password or token in the user information of a URL (scheme://user:password@host).",
		// scheme://, a user (possibly empty), ':', the password, '@' and a host. The
		// password may hold anything but white space, quotes, '@' and the characters
		// that end a URL in text; a host name starts with a letter, digit or '['.
		Regex:       regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s:@/?#'"\x60<>\\]{0,256}:([^\s@'"\x60<>\\]{1,256})@[a-z0-9\[]`),
		SecretGroup: 1,
		Keywords:    []string{"://"},
		Allowlists: []*config.Allowlist{{
			Description: "placeholders, not passwords",
			RegexTarget: "",
			Regexes: []*regexp.Regexp{
				regexp.MustCompile(`^(?:\*+|x+|X+|\.+|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{[^}]*\}\}|<[^>]*>|%[sv]|\[redacted\]|REDACTED|password|PASSWORD|pass|passwd)$`),
			},
		}},
	})
}

// ExtraRules returns the IDs of the rules this package adds to gitleaks' set, sorted.
func ExtraRules() []string {
	var ids []string
	for _, r := range extraRules() {
		ids = append(ids, r.RuleID)
	}
	slices.Sort(ids)
	return ids
}
