package secrets

import (
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/regexp"
)

// URLCredentialsRule is the ID of the rule that finds a password in a URL's user
// information: postgres://app:PASSWORD@db/prod, https://user:TOKEN@github.com/org/repo
// (as git prints a remote), redis://:PASSWORD@cache. gitleaks has no such rule.
const URLCredentialsRule = "url-credentials"

// extraRules are the rules this package adds to gitleaks' set, for what its rules miss.
func extraRules() []config.Rule {
	return []config.Rule{{
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
	}}
}
