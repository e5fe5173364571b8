package secrets

import (
	"math/rand/v2"
	"strconv"
)

// moreKinds are the kinds the side-by-side recall (TestRecallSideBySide) plants besides
// secretKinds: 26 more services' formats, and passwords in URLs. As in fakes_test.go, no
// literal here has a whole key's shape: every key is made at run time.
var moreKinds = []secretKind{
	{
		name: "github-oauth", gen: one(func(r *rand.Rand) string { return "gh" + "o_" + randString(r, alnum, 36) }),
		line: assign("GH_OAUTH_TOKEN"),
	},
	{
		name: "slack-webhook",
		gen: one(func(r *rand.Rand) string {
			return "https://hooks." + "slack.com/services/T" + randString(r, upper+digits, 8) + "/B" + randString(r, upper+digits, 10) + "/" + randString(r, alnum, 24)
		}),
		line: assign("SLACK_WEBHOOK_URL"),
	},
	{
		name: "stripe-restricted", gen: one(func(r *rand.Rand) string { return "rk" + "_live_" + randString(r, alnum, 99) }),
		line: assign("STRIPE_RESTRICTED_KEY"),
	},
	{
		name: "shopify", gen: one(func(r *rand.Rand) string { return "shp" + "at_" + randString(r, hexLower, 32) }),
		line: assign("SHOPIFY_ACCESS_TOKEN"),
	},
	{
		name: "digitalocean", gen: one(func(r *rand.Rand) string { return "dop" + "_v1_" + randString(r, hexLower, 64) }),
		line: assign("DIGITALOCEAN_TOKEN"),
	},
	{
		name: "pypi", gen: one(func(r *rand.Rand) string {
			return "pypi-" + "AgEIcHlwaS5vcmc" + "CJ" + randString(r, alnum+"-_", 152) + randString(r, alnum, 2)
		}),
		line: func(s []string) string { return "[pypi]\nusername = __token__\npassword = " + s[0] },
	},
	{
		name: "doppler", gen: one(func(r *rand.Rand) string { return "dp" + ".pt." + randString(r, alnum, 43) }),
		line: assign("DOPPLER_TOKEN"),
	},
	{
		name: "linear", gen: one(func(r *rand.Rand) string { return "lin" + "_api_" + randString(r, alnum, 40) }),
		line: assign("LINEAR_API_KEY"),
	},
	{
		name: "postman", gen: one(func(r *rand.Rand) string {
			return "PM" + "AK-" + randString(r, hexLower, 24) + "-" + randString(r, hexLower, 34)
		}),
		line: assign("POSTMAN_API_KEY"),
	},
	{
		name: "pulumi", gen: one(func(r *rand.Rand) string { return "pu" + "l-" + randString(r, hexLower, 40) }),
		line: assign("PULUMI_ACCESS_TOKEN"),
	},
	{
		name: "planetscale", gen: one(func(r *rand.Rand) string { return "pscale" + "_tkn_" + randString(r, alnum+"_", 42) + "x" }),
		line: assign("PLANETSCALE_SERVICE_TOKEN"),
	},
	{
		name: "grafana-cloud", gen: one(func(r *rand.Rand) string { return "gl" + "c_eyJ" + randString(r, alnum, 96) }),
		line: assign("GRAFANA_CLOUD_TOKEN"),
	},
	{
		name: "newrelic-user-key", gen: one(func(r *rand.Rand) string { return "NR" + "AK-" + randString(r, upper+digits, 27) }),
		line: assign("NEW_RELIC_API_KEY"),
	},
	{
		name: "databricks", gen: one(func(r *rand.Rand) string { return "da" + "pi" + randString(r, hexLower, 32) }),
		line: assign("DATABRICKS_TOKEN"),
	},
	{
		name: "heroku", gen: one(func(r *rand.Rand) string { return "HR" + "KU-AA" + randString(r, alnum+"_-", 57) + "Z" }),
		line: assign("HEROKU_API_KEY"),
	},
	{
		name: "groq", gen: one(func(r *rand.Rand) string { return "gs" + "k_" + randString(r, alnum, 52) }),
		line: assign("GROQ_API_KEY"),
	},
	{
		name: "xai", gen: one(func(r *rand.Rand) string { return "xa" + "i-" + randString(r, alnum, 80) }),
		line: assign("XAI_API_KEY"),
	},
	{
		name: "supabase", gen: one(func(r *rand.Rand) string { return "sb" + "p_" + randString(r, lower+digits, 40) }),
		line: assign("SUPABASE_ACCESS_TOKEN"),
	},
	{
		name: "dockerhub", gen: one(func(r *rand.Rand) string { return "dckr" + "_pat_" + randString(r, alnum+"_-", 26) + "Q" }),
		line: func(s []string) string { return "echo " + s[0] + " | docker login -u acme --password-stdin" },
	},
	{
		name: "vault", gen: one(func(r *rand.Rand) string { return "hv" + "s." + randString(r, alnum+"_-", 94) + "Q" }),
		line: assign("VAULT_TOKEN"),
	},
	{
		name: "age", gen: one(func(r *rand.Rand) string {
			return "AGE-" + "SECRET-KEY-1" + randString(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
		}),
		line: func(s []string) string { return "# created: 2026-03-01\n" + s[0] },
	},
	{
		name: "telegram", gen: one(func(r *rand.Rand) string {
			return strconv.Itoa(100000000+r.IntN(899999999)) + ":AA" + randString(r, alnum+"_-", 32) + "Q"
		}),
		line: assign("TELEGRAM_BOT_TOKEN"),
	},
	{
		name: "discord-webhook", gen: one(func(r *rand.Rand) string {
			return "https://discord" + ".com/api/webhooks/" + randString(r, digits, 18) + "/" + randString(r, alnum+"-", 67) + "Q"
		}),
		line: assign("DISCORD_WEBHOOK"),
	},
	{
		name: "gemini", gen: one(func(r *rand.Rand) string { return "AI" + "zaSy" + randString(r, alnum+"_-", 32) + "Q" }),
		line: assign("GOOGLE_API_KEY"),
	},
	{
		name: "postgres-url", url: true,
		gen:  one(func(r *rand.Rand) string { return randString(r, alnum, 18) }),
		line: func(s []string) string { return "DATABASE_URL=postgres://app:" + s[0] + "@db.internal:5432/prod" },
	},
	{
		name: "git-remote-url", url: true,
		gen: one(func(r *rand.Rand) string { return randString(r, alnum, 24) }),
		line: func(s []string) string {
			return "$ git remote -v\norigin\thttps://deploy:" + s[0] + "@github.com/acme/app.git (fetch)"
		},
	},
	{
		name: "redis-url", url: true,
		gen:  one(func(r *rand.Rand) string { return randString(r, alnum, 20) }),
		line: func(s []string) string { return "REDIS_URL=redis://default:" + s[0] + "@cache.internal:6379/0" },
	},
}
