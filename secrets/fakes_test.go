package secrets

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Fake secrets in the shapes gitleaks' rules look for, made at run time from a seeded
// generator. No literal in this file has a whole key's shape, so a push to a forge that
// scans for keys is not refused.

const (
	upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower    = "abcdefghijklmnopqrstuvwxyz"
	digits   = "0123456789"
	alnum    = upper + lower + digits
	hexLower = "0123456789abcdef"
	base32   = upper + "234567"
	b64chars = alnum + "+/"
)

// randString returns n characters drawn from set.
func randString(r *rand.Rand, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[r.IntN(len(set))]
	}
	return string(b)
}

// word is randString over word characters and '-', ending in a letter or digit, as real
// keys do (a key's last character is where the rules look for a word boundary).
func word(r *rand.Rand, n int) string {
	return randString(r, alnum+"_-", n-1) + randString(r, alnum, 1)
}

func pemBlock(r *rand.Rand, label string, lines int, first string) string {
	body := first + randString(r, b64chars, lines*64-len(first))
	var b strings.Builder
	b.WriteString("-----" + "BEGIN " + label + " PRIVATE" + " KEY-----\n")
	for i := 0; i < len(body); i += 64 {
		b.WriteString(body[i:min(i+64, len(body))])
		b.WriteByte('\n')
	}
	b.WriteString("-----" + "END " + label + " PRIVATE" + " KEY-----")
	return b.String()
}

func jwt(r *rand.Rand) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims := fmt.Sprintf(`{"sub":"%s","name":"%s","iat":%d}`, randString(r, digits, 10), randString(r, lower, 8), 1700000000+r.IntN(1e8))
	sig := make([]byte, 32)
	for i := range sig {
		sig[i] = byte(r.Uint32())
	}
	return head + "." + enc.EncodeToString([]byte(claims)) + "." + enc.EncodeToString(sig)
}

// place is where in a tape a secret is planted.
type place string

const (
	inHeader     place = "header"      // a request header
	inQuery      place = "query"       // a query parameter in request.path
	inRawBody    place = "raw-body"    // a message text inside request.raw
	inToolResult place = "tool-result" // a tool result's text
	inToolInput  place = "tool-input"  // a string in a tool call's input
)

var textPlaces = []place{inRawBody, inToolResult, inToolInput}
var allPlaces = []place{inHeader, inQuery, inRawBody, inToolResult, inToolInput}

// secretKind is one kind of secret and how it appears in text, in a header and in a query
// string.
type secretKind struct {
	name   string
	places []place
	// gen returns the secrets of one planting (two for an AWS key pair).
	gen func(r *rand.Rand) []string
	// line shows them as they appear in a file, a command or a chat message.
	line func(s []string) string
	// header and param name the header and the query parameter that carry s[0].
	header, param string
	// headerValue formats s[0] as a header value; nil means s[0] as it is.
	headerValue func(s string) string
	// url says that s[0] is the password of a URL that line writes: it is planted in text
	// and files only.
	url bool
}

func one(f func(r *rand.Rand) string) func(r *rand.Rand) []string {
	return func(r *rand.Rand) []string { return []string{f(r)} }
}

func assign(name string) func(s []string) string {
	return func(s []string) string { return "export " + name + "=" + s[0] }
}

func bearer(s string) string { return "Bearer " + s }

// secretKinds are the 20 kinds the recall test plants.
var secretKinds = []secretKind{
	{
		name: "anthropic", places: allPlaces, header: "x-custom-key", param: "key",
		gen:  one(func(r *rand.Rand) string { return "sk-" + "ant-" + "api03-" + word(r, 93) + "AA" }),
		line: assign("ANTHROPIC_API_KEY"),
	},
	{
		name: "openai", places: allPlaces, header: "x-portkey-virtual-key", param: "api_key",
		gen: one(func(r *rand.Rand) string {
			return "sk-" + "proj-" + word(r, 74) + "T3Blbk" + "FJ" + word(r, 74)
		}),
		line: assign("OPENAI_API_KEY"), headerValue: bearer,
	},
	{
		name: "aws", places: textPlaces,
		gen: func(r *rand.Rand) []string {
			return []string{"AK" + "IA" + randString(r, base32, 16), randString(r, b64chars, 40)}
		},
		line: func(s []string) string {
			return "[default]\naws_access_key_id = " + s[0] + "\naws_secret_access_key = " + s[1] + "\nregion = us-east-1"
		},
	},
	{
		name: "github-pat", places: allPlaces, header: "x-github-token", param: "access_token",
		gen:  one(func(r *rand.Rand) string { return "gh" + "p_" + randString(r, alnum, 36) }),
		line: assign("GITHUB_TOKEN"), headerValue: func(s string) string { return "token " + s },
	},
	{
		name: "github-fine-grained", places: allPlaces, header: "x-session", param: "token",
		gen: one(func(r *rand.Rand) string {
			return "github" + "_pat_" + randString(r, alnum, 22) + "_" + randString(r, alnum, 59)
		}),
		line: func(s []string) string { return "git clone https://oauth2:" + s[0] + "@github.com/acme/app.git" },
	},
	{
		name: "huggingface", places: allPlaces, header: "x-hf-token", param: "hf_token",
		gen:  one(func(r *rand.Rand) string { return "h" + "f_" + randString(r, upper+lower, 34) }),
		line: assign("HF_TOKEN"), headerValue: bearer,
	},
	{
		name: "slack-bot", places: allPlaces, header: "x-slack-auth", param: "token",
		gen: one(func(r *rand.Rand) string {
			return "xo" + "xb-" + randString(r, digits, 11) + "-" + randString(r, digits, 12) + "-" + randString(r, alnum, 24)
		}),
		line: assign("SLACK_BOT_TOKEN"), headerValue: bearer,
	},
	{
		name: "stripe", places: allPlaces, header: "x-stripe-key", param: "key",
		gen: one(func(r *rand.Rand) string { return "sk" + "_live_" + randString(r, alnum, 24+r.IntN(75)) }),
		// Not Stripe's own curl form "-u KEY:": gitleaks' rule wants white space, a quote
		// or ';' after the key (TestKnownGaps).
		line: func(s []string) string { return "stripe.api_key = '" + s[0] + "'" },
	},
	{
		name: "google-api-key", places: allPlaces, header: "x-goog-user-key", param: "key",
		gen:  one(func(r *rand.Rand) string { return "AI" + "za" + randString(r, alnum+"_-", 35) }),
		line: assign("GEMINI_API_KEY"),
	},
	{
		name: "rsa-private-key", places: textPlaces,
		gen:  one(func(r *rand.Rand) string { return pemBlock(r, "RSA", 25, "MIIEpAIBAAKCAQEA") }),
		line: func(s []string) string { return "$ cat ~/.ssh/id_rsa\n" + s[0] + "\n" },
	},
	{
		name: "ec-private-key", places: textPlaces,
		gen:  one(func(r *rand.Rand) string { return pemBlock(r, "EC", 3, "MHcCAQEEI") }),
		line: func(s []string) string { return "key.pem:\n" + s[0] },
	},
	{
		name: "openssh-private-key", places: textPlaces,
		gen:  one(func(r *rand.Rand) string { return pemBlock(r, "OPENSSH", 6, "b3BlbnNzaC1rZXktdjEAAAAA") }),
		line: func(s []string) string { return s[0] + "\n" },
	},
	{
		name: "jwt", places: allPlaces, header: "x-session", param: "id_token",
		gen: one(jwt),
		line: func(s []string) string {
			return "curl -H 'Authorization: Bearer " + s[0] + "' https://api.internal/v1/me"
		},
	},
	{
		name: "gitlab-pat", places: allPlaces, header: "private-token", param: "private_token",
		gen:  one(func(r *rand.Rand) string { return "gl" + "pat-" + randString(r, alnum+"_-", 20) }),
		line: assign("GITLAB_TOKEN"),
	},
	{
		name: "npm", places: allPlaces, header: "x-npm-token", param: "token",
		gen:  one(func(r *rand.Rand) string { return "np" + "m_" + randString(r, lower+digits, 36) }),
		line: func(s []string) string { return "//registry.npmjs.org/:_authToken=" + s[0] },
	},
	{
		name: "twilio", places: allPlaces, header: "x-twilio-key", param: "api_key",
		gen:  one(func(r *rand.Rand) string { return "S" + "K" + randString(r, hexLower, 32) }),
		line: assign("TWILIO_API_KEY"),
	},
	{
		name: "sendgrid", places: allPlaces, header: "x-sendgrid-key", param: "key",
		gen: one(func(r *rand.Rand) string {
			return "S" + "G." + randString(r, alnum+"_-", 22) + "." + randString(r, alnum+"_-", 43)
		}),
		line: assign("SENDGRID_API_KEY"), headerValue: bearer,
	},
	{
		name: "datadog", places: allPlaces, header: "x-datadog-api-key", param: "datadog_api_key",
		gen:  one(func(r *rand.Rand) string { return randString(r, lower+digits, 40) }),
		line: assign("DATADOG_API_KEY"),
	},
	{
		name: "azure-client-secret", places: allPlaces, header: "x-azure-client-secret", param: "client_secret",
		gen: one(func(r *rand.Rand) string {
			return randString(r, alnum, 3) + randString(r, digits, 1) + "Q" + "~" + randString(r, alnum+"_~.-", 33) + randString(r, alnum, 1)
		}),
		line: assign("AZURE_CLIENT_SECRET"),
	},
	{
		name: "password", places: allPlaces, header: "x-db-password", param: "password",
		gen:  one(func(r *rand.Rand) string { return randString(r, alnum, 20+r.IntN(5)) }),
		line: func(s []string) string { return "DB_PASSWORD=" + s[0] },
	},
}
