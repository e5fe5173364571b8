package secrets

import (
	"regexp"
	"strings"
)

// trufflehogCommit is the commit of github.com/trufflesecurity/trufflehog whose detectors'
// keywords and expressions trufflehogDetectors transcribes (pkg/detectors/NAME/...), for
// TestRecallSideBySide. Only what decides a match is taken: a detector's keywords (which
// TruffleHog requires, case-insensitively, in a chunk before it runs the detector) and its
// expressions for the secret. Verification against the service is left out: it can only
// drop findings, and our corpus's keys are fake.
const trufflehogCommit = "3ab759fef"

// thDetector is one TruffleHog detector: a chunk holding one of keywords is matched
// against patterns.
type thDetector struct {
	name     string
	keywords []string
	patterns []*regexp.Regexp
}

// thPrefix is TruffleHog's detectors.PrefixRegex: one of the words, then up to 40
// characters before the secret.
func thPrefix(words ...string) string {
	return `(?i:` + strings.Join(words, "|") + `)(?:.|[\n\r]){0,40}?`
}

func th(name string, keywords []string, patterns ...string) thDetector {
	d := thDetector{name: name, keywords: keywords}
	for _, p := range patterns {
		d.patterns = append(d.patterns, regexp.MustCompile(p))
	}
	return d
}

// trufflehogDetectors are the detectors of the services the corpus plants (and a few
// neighbours), as TruffleHog has them at trufflehogCommit.
var trufflehogDetectors = []thDetector{
	th("anthropic", []string{"sk-ant-api03", "sk-ant-admin01"}, `\b(sk-ant-(?:admin01|api03)-[\w\-]{93}AA)\b`),
	th("openai", []string{"T3BlbkFJ"}, `\b(sk-(?:(?:proj|svcacct|service)-[A-Za-z0-9_-]+|[a-zA-Z0-9]+)T3BlbkFJ[A-Za-z0-9_-]+)\b`),
	th("aws/access_keys", []string{"AKIA", "ABIA", "ACCA"}, `\b((?:AKIA|ABIA|ACCA)[A-Z0-9]{16})\b`),
	th("github/v2", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, `\b((?:ghp|gho|ghu|ghs|ghr|github_pat)_[a-zA-Z0-9_]{36,255})\b`),
	th("huggingface", []string{"hf_", "api_org_"}, `\b(?:hf_|api_org_)[a-zA-Z0-9]{34}\b`),
	th("slack", []string{"xoxb-", "xoxp-", "xoxa-", "xoxr-"},
		`xoxb\-[0-9]{10,13}\-[0-9]{10,13}[a-zA-Z0-9\-]*`, `xoxp\-[0-9]{10,13}\-[0-9]{10,13}[a-zA-Z0-9\-]*`,
		`xoxa\-[0-9]{10,13}\-[0-9]{10,13}[a-zA-Z0-9\-]*`, `xoxr\-[0-9]{10,13}\-[0-9]{10,13}[a-zA-Z0-9\-]*`),
	th("stripe", []string{"k_live"}, `[rs]k_live_[a-zA-Z0-9]{20,247}`),
	th("googlegemini", []string{"aizasy"}, `\b(AIzaSy[A-Za-z0-9_-]{33})`),
	th("privatekey", []string{"private key"}, `(?i)-----\s*?BEGIN[ A-Z0-9_-]*?PRIVATE KEY\s*?-----[\s\S]*?----\s*?END[ A-Z0-9_-]*? PRIVATE KEY\s*?-----`),
	th("jwt", []string{"ewogIC", "ewoid", "eyJ"}, `\b((?:eyJ|ewogIC|ewoid)[A-Za-z0-9_-]{12,}={0,2}\.(?:eyJ|ewo)[A-Za-z0-9_-]{12,}={0,2}\.[A-Za-z0-9_-]{12,})\b`),
	th("gitlab/v2", []string{"glpat-"}, `\b(glpat-[a-zA-Z0-9\-=_]{20,22})\b`),
	th("gitlab/v3", []string{"glpat-"}, `\b(glpat-[a-zA-Z0-9\-=_]{27,300}.[0-9a-z]{2}.[a-z0-9]{9})\b`),
	th("npmtokenv2", []string{"npm_"}, `(npm_[0-9a-zA-Z]{36})`),
	th("twilioapikey", []string{"twilio"}, `\bSK[a-zA-Z0-9]{32}\b`),
	th("sendgrid", []string{"SG."}, `\bSG\.[\w\-]{20,24}\.[\w\-]{39,50}\b`),
	th("datadogtoken", []string{"datadog", "ddog-gov"}, thPrefix("datadog", "dd")+`\b([a-zA-Z-0-9]{40})\b`, thPrefix("datadog", "dd")+`\b([a-zA-Z-0-9]{32})\b`),
	th("azure_entra/serviceprincipal/v2", []string{"q~"}, `(?:[^a-zA-Z0-9_~.-]|\A)([a-zA-Z0-9_~.-]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:[^a-zA-Z0-9_~.-]|\z)`),
	th("shopify", []string{"shppa_", "shpat_"}, `\b(shppa_|shpat_)([0-9A-Fa-f]{32})\b`),
	th("digitaloceanv2", []string{"dop_v1_", "doo_v1_", "dor_v1_"}, `\b((?:dop|doo|dor)_v1_[a-f0-9]{64})\b`),
	th("pypi", []string{"pypi-AgEIcHlwaS5vcmcCJ"}, `(pypi-AgEIcHlwaS5vcmcCJ[a-zA-Z0-9-_]{150,157})`),
	th("doppler", []string{"dp.ct.", "dp.pt.", "dp.st", "dp.sa.", "dp.scim.", "dp.audit."}, `\b(dp\.(?:ct|pt|st(?:\.[a-z0-9\-_]{2,35})?|sa|scim|audit)\.[a-zA-Z0-9]{40,44})\b`),
	th("linearapi", []string{"lin_api_"}, `\b(lin_api_[0-9A-Za-z]{40})\b`),
	th("postman", []string{"PMAK-"}, `\b(PMAK-[a-zA-Z-0-9]{59})\b`),
	th("pulumi", []string{"pul-"}, `\b(pul-[a-z0-9]{40})\b`),
	th("planetscale", []string{"pscale_tkn_"}, `\bpscale_tkn_[A-Za-z0-9_]{43}\b`),
	th("grafana", []string{"glc_eyJ"}, `\b(glc_eyJ[A-Za-z0-9+\/=]{60,160})`),
	th("newrelicpersonalapikey", []string{"newrelic"}, thPrefix("newrelic")+`\b([A-Za-z0-9_\.]{4}-[A-Za-z0-9_\.]{42})\b`),
	th("databrickstoken", []string{"databricks", "dapi"}, `\b(dapi[0-9a-f]{32}(-\d)?)\b`),
	th("heroku/v2", []string{"HRKU-AA"}, `\b(HRKU-AA[0-9a-zA-Z_-]{58})\b`),
	th("groq", []string{"gsk_"}, `\b(gsk_[a-zA-Z0-9]{52})\b`),
	th("xai", []string{"xai-"}, `\b(xai-[0-9a-zA-Z_]{80})\b`),
	th("supabasetoken", []string{"sbp_"}, `\b(sbp_[a-z0-9]{40})\b`),
	th("dockerhub/v2", []string{"docker", "dckr_pat_", "dckr_oat_"}, `\b(dckr_pat_[a-zA-Z0-9_-]{27}|dckr_oat_[a-zA-Z0-9_-]{32})(?:[^a-zA-Z0-9_-]|\z)`),
	th("hashicorpvaulttoken", []string{"hvs.", "vault"}, `\b(hvs\.[A-Za-z0-9_-]{90,120}|s\.[A-Za-z0-9_-]{18,40})(?:$|[^A-Za-z0-9_-])`),
	th("telegrambottoken", []string{"telegram", "tgram"}, thPrefix("telegram", "tgram://")+`\b([0-9]{8,10}:[a-zA-Z0-9_-]{35})\b`),
	th("discordwebhook", []string{"https://discord.com/api/webhooks/"}, `(https:\/\/discord\.com\/api\/webhooks\/[0-9]{18,19}\/[0-9a-zA-Z-]{68})`),
	th("slackwebhook", []string{"hooks.slack.com"}, `(https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{23,25})`),
	th("uri", []string{"http://", "https://"}, `\bhttps?:\/\/[\w!#$%&()*+,\-./;<=>?@[\\\]^_{|}~]{0,50}:([\w!#$%&()*+,\-./:;<=>?[\\\]^_{|}~]{3,50})@[a-zA-Z0-9.-]+(?:\.[a-zA-Z]{2,})?(?::\d{1,5})?[\w/]+\b`),
	th("postgres", []string{"postgres"}, `\b(?i)(postgres(?:ql)?)://\S+\b`),
	th("redis", []string{"redis"}, `\bredi[s]{1,2}://[\S]{3,50}:([\S]{3,50})@[-.%\w\/:]+\b`),
	th("mongodb", []string{"mongodb"}, `\b(mongodb(?:\+srv)?://(?P<username>\S{3,50}):(?P<password>\S{3,88})@(?P<host>[-.%\w]+(?::\d{1,5})?(?:,[-.%\w]+(?::\d{1,5})?)*))`),
	th("mailgun", []string{"mailgun", "key-"}, `\b(key-[a-z0-9]{32})\b`),
	th("notion", []string{"notion"}, `\b(secret_[A-Za-z0-9]{43})\b`),
	th("circleci/v2", []string{"CCIPAT_"}, `(CCIPAT_[a-zA-Z0-9]{22}_[a-fA-F0-9]{40})`),
	th("cloudflareapitoken/v2", []string{"cfut_", "cfat_"}, `\b(cf[ua]t_[a-zA-Z0-9]{40}[a-f0-9]{8})\b`),
	th("replicate", []string{"replicate", "r8_"}, `\b(r8_[0-9A-Za-z-_]{37})\b`),
}

// trufflehogFinds reports whether one of the detectors, run on text as TruffleHog runs
// them on a chunk, matches secret (or its JSON-escaped form): the whole match or one of its
// groups holds it.
func trufflehogFinds(text, secret string) bool {
	lower := strings.ToLower(text)
	forms := secretForms(secret)
	for _, d := range trufflehogDetectors {
		hit := false
		for _, k := range d.keywords {
			if strings.Contains(lower, strings.ToLower(k)) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		for _, p := range d.patterns {
			for _, m := range p.FindAllStringSubmatch(text, -1) {
				for _, g := range m {
					if holds(g, forms) {
						return true
					}
				}
			}
		}
	}
	return false
}

// secretForms are the spellings of a secret in a file: itself, and as a JSON string
// writes it (a private key's line breaks as \n).
func secretForms(secret string) []string {
	esc := strings.NewReplacer("\n", `\n`, `"`, `\"`, `\`, `\\`).Replace(secret)
	if esc == secret {
		return []string{secret}
	}
	return []string{secret, esc}
}

// holds reports whether a found string is one of the forms of the secret: it holds it
// whole, or is the part of it a rule's group takes (at least 16 bytes of it).
func holds(found string, forms []string) bool {
	for _, f := range forms {
		if strings.Contains(found, f) || (len(found) >= 16 && strings.Contains(f, found)) {
			return true
		}
	}
	return false
}
