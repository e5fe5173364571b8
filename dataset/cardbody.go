package dataset

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// bodyStats gathers what the card's body says about the tapes.
type bodyStats struct {
	rowCount  map[string]map[string]int64 // config, split
	harnesses map[string]int64
	models    map[string]int64
	providers map[string]int64
	ended     map[string]int64
	tapeBytes map[string]int64 // split
	// withSnapshot counts the tapes whose start snapshot the dataset holds, leftOut
	// those that name one it does not hold.
	withSnapshot, leftOut int64
	// traces counts the session files under traces/ by harness folder.
	traces map[string]int64
	// priced counts the tapes with a known cost and usd sums it; unpriced counts the
	// others by model (the table has no price for a model they call); pricesDate is the
	// price table's date.
	priced     int64
	usd        float64
	unpriced   map[string]int64
	pricesDate string
}

// tapeSummary is the projection of the tapes table the body needs.
type tapeSummary struct {
	Harness        string  `parquet:"harness"`
	HarnessVersion string  `parquet:"harness_version"`
	Provider       string  `parquet:"provider"`
	Model          string  `parquet:"model"`
	EndedReason    *string `parquet:"ended_reason,optional"`
	// WorkspaceDigest and WorkspaceIncluded say whether the tape has a start snapshot and
	// whether the dataset holds it.
	WorkspaceDigest   *string `parquet:"workspace_digest,optional"`
	WorkspaceIncluded bool    `parquet:"workspace_included"`
	TapeBytes         int64   `parquet:"tape_bytes"`
	// CostUSD is null when the price table has no price for a model the tape calls.
	CostUSD    *float64 `parquet:"cost_usd,optional"`
	PricesDate string   `parquet:"prices_date"`
}

func (s *bodyStats) rows(config, split string, n int64) {
	if s.rowCount == nil {
		s.rowCount = map[string]map[string]int64{}
	}
	if s.rowCount[config] == nil {
		s.rowCount[config] = map[string]int64{}
	}
	s.rowCount[config][split] += n
}

func (s *bodyStats) totalTapes() int64 {
	var n int64
	for _, v := range s.rowCount[configTapes] {
		n += v
	}
	return n
}

// tapes reads the small columns of a split's tapes shards.
func (s *bodyStats) tapes(split string, files []shardFile) error {
	if s.harnesses == nil {
		s.harnesses, s.models, s.providers, s.ended, s.tapeBytes = map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
		s.unpriced = map[string]int64{}
	}
	for _, f := range files {
		err := readShard(f, tapesTable, 256, func(_ int64, rows []tapeSummary) error {
			for _, r := range rows {
				s.harnesses[r.Harness+" "+r.HarnessVersion]++
				s.models[r.Model]++
				s.providers[r.Provider]++
				s.ended[cmp.Or(deref(r.EndedReason), "running or killed")]++
				s.tapeBytes[split] += r.TapeBytes
				s.pricesDate = r.PricesDate
				if r.CostUSD != nil {
					s.priced++
					s.usd += *r.CostUSD
				} else {
					s.unpriced[cmp.Or(r.Model, "(no model)")]++
				}
				switch {
				case r.WorkspaceIncluded:
					s.withSnapshot++
				case r.WorkspaceDigest != nil:
					s.leftOut++
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// counted renders "a (3), b (1)", most frequent first.
func counted(m map[string]int64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// body writes the card's Markdown: the title and what a tape is, then one section each
// for the contents, the configs, the traces (when the dataset has them), use, and how it
// was made.
func (s *bodyStats) body(l layout, c *Card, opts CardOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.PrettyName)
	b.WriteString("Runs of AI coding agents recorded by [TapeBox](https://github.com/tapebox/tapebox) as *tapes*: " +
		"every model call an agent made (request, response, timing), the tool calls in each answer and the tool " +
		"results the harness sent back, for the main agent and each subagent. One tape per run.\n\n")
	s.contents(&b, l, c)
	configsSection(&b, l)
	s.tracesSection(&b)
	b.WriteString("\n## Use\n\n```python\nfrom datasets import load_dataset\n\n" +
		"tapes = load_dataset(\"OWNER/NAME\", \"tapes\", split=\"train\")\n" +
		"steps = load_dataset(\"OWNER/NAME\", \"steps\", split=\"train\")\n```\n\n" +
		"`tapebox dataset import DIR --out TAPES_DIR` rebuilds every tape file, byte for byte, with its start " +
		"snapshot beside it; `tapebox replay` plays one back in a sandbox without a model.\n\n")
	madeSection(&b, l, c, opts)
	return b.String()
}

// contents writes the Contents section: the splits' sizes, then what the tapes hold
// (harnesses, models, providers, how they ended, cost, start snapshots).
func (s *bodyStats) contents(b *strings.Builder, l layout, c *Card) {
	b.WriteString("## Contents\n\n| split | tapes | steps (model calls) | tape JSON |\n|---|---:|---:|---:|\n")
	for _, split := range l.splits(configTapes) {
		fmt.Fprintf(b, "| %s | %d | %d | %s |\n", split, s.rowCount[configTapes][split], s.rowCount[configSteps][split], humanBytes(s.tapeBytes[split]))
	}
	fmt.Fprintf(b, "\n- Harnesses: %s\n- Models: %s\n- Providers (wire formats): %s\n- Ended: %s\n",
		counted(s.harnesses), counted(s.models), counted(s.providers), counted(s.ended))
	s.costLine(b)
	var snapshots, snapshotBytes int64
	for _, info := range c.DatasetInfo {
		if info.ConfigName == configWorkspaces {
			snapshotBytes = info.DownloadSize
			for _, si := range info.Splits {
				snapshots += si.NumExamples
			}
		}
	}
	if s.withSnapshot > 0 || snapshots > 0 {
		fmt.Fprintf(b, "- Start snapshots: %d tapes start from one of the %d in the `workspaces` config (%s)\n",
			s.withSnapshot, snapshots, humanBytes(snapshotBytes))
	}
	if s.leftOut > 0 {
		fmt.Fprintf(b, "- %d tapes name a start snapshot that was left out of the dataset (`workspace_included` is false)\n", s.leftOut)
	}
	b.WriteString("\n")
}

// costLine writes the line on the tapes' cost at list prices, and on those whose cost is
// unknown, when any tape was counted.
func (s *bodyStats) costLine(b *strings.Builder) {
	if s.priced+int64(len(s.unpriced)) == 0 {
		return
	}
	fmt.Fprintf(b, "- Cost at list prices of %s (`cost_usd`): $%.2f for %s", s.pricesDate, s.usd, tapesCount(s.priced))
	if len(s.unpriced) > 0 {
		var n int64
		for _, c := range s.unpriced {
			n += c
		}
		fmt.Fprintf(b, "; unknown for %s, whose model has no price in the table (`cost_usd` is null): %s", tapesCount(n), counted(s.unpriced))
	}
	b.WriteString("\n")
}

// configsSection writes the Configs section: what a row of each config holds (workspaces
// and traces when the dataset has them), and which columns are JSON text.
func configsSection(b *strings.Builder, l layout) {
	b.WriteString("## Configs\n\n")
	b.WriteString("- `tapes` (default): one row per tape: id, harness and version, provider, model, working directory, start, how " +
		"the run ended, task and labels, replay_of, the start snapshot of the workspace (`workspace_digest`, " +
		"`workspace_size`, `workspace_files`; null when the run took none), the number of entries of its end manifest " +
		"(`workspace_end_files`), whether the `workspaces` config holds the snapshot (`workspace_included`), counts " +
		"of threads, steps and tool calls, tool names, token totals (cache tokens included), duration, and " +
		"`tape_json`, the whole tape in its canonical encoding (the end manifest included), so that nothing is lost.\n")
	b.WriteString("- `steps`: one row per model call: tape and thread ids, the thread's parent tool call, step index, " +
		"model, stop reason, token usage, latency (request, first byte, last byte, next request; milliseconds " +
		"since the tape's start), the messages new in this step, the response content, the tool calls and their " +
		"results. A step holds only the messages after the prefix its request shares with the thread's previous " +
		"request (`message_offset` says how many it shares), and `system` and `tools_json` only when they changed, " +
		"so the table grows linearly with a conversation. Raw bodies and stream chunks are in `tape_json`.\n")
	if len(l[configWorkspaces]) > 0 {
		b.WriteString("- `workspaces`: one row per start snapshot: `digest` (`sha256:<hex>` of the bytes, the tapes' " +
			"`workspace_digest`), `size` and `snapshot`, the bytes of the tar compressed with zstd that a replay " +
			"unpacks as the starting workspace. Tapes that start from the same snapshot share its row.\n")
	}
	if len(l[configTraces]) > 0 {
		b.WriteString("- `traces`: one row per session file of a tape (one per thread: the main agent and each " +
			"subagent), in the Hub's agent-traces schema, which its trace viewer shows: `harness` (claude_code, codex, " +
			"or the harness of a Session Trace Simple file), `session_id`, `prompt` and `sent_at` (the user's first " +
			"message and when), `messages` (the chat messages: role, content, reasoning_content, tool_calls, " +
			"tool_call_id), `tools`, `metadata` (tape and thread ids, model, provider, usage), `num_user_messages`, " +
			"`num_tool_calls`, `trace` (the session file's content) and `file_path` (the file under `" + TracesDir +
			"/`). `messages` and `tools` are lists of `json`, `metadata` and `trace` are `json` (JSON text that " +
			"`datasets` decodes).\n")
	}
	b.WriteString("\n")
	b.WriteString("Nested values that Parquet readers handle poorly (variable shapes, free-form objects) are JSON " +
		"strings; decode them with `json.loads`:\n\n")
	for _, config := range configs {
		if len(jsonColumns[config]) == 0 {
			continue
		}
		cols := make([]string, len(jsonColumns[config]))
		for i, col := range jsonColumns[config] {
			cols[i] = "`" + col + "`"
		}
		fmt.Fprintf(b, "- `%s`: %s\n", config, strings.Join(cols, ", "))
	}
}

// tracesSection writes the Traces section when the dataset holds session files.
func (s *bodyStats) tracesSection(b *strings.Builder) {
	if len(s.traces) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Traces\n\n`%s/` holds each tape as the session files its harness writes itself (%s), in the "+
		"layouts the Hub's trace viewer detects: Claude Code's `<project>/<session>.jsonl` with subagent sidechains "+
		"under `<session>/subagents/`, Codex's `YYYY/MM/DD/rollout-*.jsonl`, and the Session Trace Simple format for "+
		"other harnesses. They are a view of the same runs made from the tapes: each session's conversation, tool "+
		"calls and results in order, but not the raw wire bodies, stream chunks, latencies or workspace snapshots, "+
		"which only the tapes hold (`tape_json`).\n",
		TracesDir, counted(s.traces))
}

// madeSection writes How it was made: the program, the schema check, the shards' format
// (and the Arrow files beside them, if any), and the license.
func madeSection(b *strings.Builder, l layout, c *Card, opts CardOptions) {
	b.WriteString("## How it was made\n\n")
	made := "`tapebox dataset export`"
	if opts.MadeWith != "" {
		made += " (" + opts.MadeWith + ")"
	}
	fmt.Fprintf(b, "Exported by %s. Every tape was validated against the TapeBox tape schema (format version 1) "+
		"on the way in. Parquet shards are zstd-compressed, with a page index, row groups of at most about 100 MB "+
		"and shards of at most about 500 MB of uncompressed data; `num_bytes` counts the Arrow in-memory size of "+
		"the columns.", made)
	hasArrow := false
	for _, config := range configs {
		for _, split := range l.splits(config) {
			hasArrow = hasArrow || len(l[config][split]["arrow"]) > 0
		}
	}
	if hasArrow {
		b.WriteString(" The `.arrow` files beside the shards hold the same rows as Arrow IPC streams " +
			"(zstd-compressed buffers), the format `datasets` reads for Arrow data files.")
	}
	b.WriteString("\n\n")
	if c.License == LicenseUnknown {
		b.WriteString("License: not given yet (`unknown`). `tapebox dataset export --license ID` sets it (a Hub license id " +
			"such as `apache-2.0`, `mit`, `cc-by-4.0`, or `other`); the tapes' content comes from the agents' tasks and " +
			"repositories, so choose one that their licenses allow.\n")
	} else {
		fmt.Fprintf(b, "License: `%s`.\n", c.License)
	}
}

// The lines around the part of the card's body that TapeBox writes. An export rewrites
// what is between them and keeps the rest, the author's.
const (
	bodyBegin = "<!-- tapebox:begin: tapebox dataset export rewrites everything up to tapebox:end; write your own text before or after -->"
	bodyEnd   = "<!-- tapebox:end -->"
)

// mergeBody puts a new generated body in the place of the generated part of an existing
// card's body (generatedPart), keeping the author's text around it. A body without a
// generated part is kept whole, the generated part after it.
func mergeBody(old, generated string) (string, error) {
	block := bodyBegin + "\n" + generated + bodyEnd + "\n"
	start, end, ok, err := generatedPart(old)
	if err != nil {
		return "", err
	}
	if !ok {
		start, end = len(old), len(old)
	}
	var b strings.Builder
	if before := strings.TrimRight(old[:start], "\n"); strings.TrimSpace(before) != "" {
		b.WriteString(before + "\n\n")
	}
	b.WriteString(block)
	if after := strings.TrimLeft(old[end:], "\n"); strings.TrimSpace(after) != "" {
		b.WriteString("\n" + after)
	}
	return b.String(), nil
}

// legacyMade starts the last section of a body TapeBox wrote before it marked its part,
// and legacyLicense its last paragraph.
const (
	legacyMade    = "\n## How it was made\n\nExported by `tapebox dataset export`"
	legacyLicense = "License: set `license` in the metadata above before publishing"
)

// generatedPart finds the part of a card's body that TapeBox wrote, as byte offsets:
// from the tapebox:begin line to the end of the tapebox:end line. In a body TapeBox
// wrote before it marked its part, it is the top of the body to the end of the
// "How it was made" paragraph (and the license note after it, if still there): text an
// author added after that is kept, an edit inside is not. ok is false for a body with no
// such part. A marker without the other is an error, since what is the author's is then
// unclear.
func generatedPart(body string) (start, end int, ok bool, err error) {
	start, end = -1, -1
	for off := 0; off < len(body); {
		line, _, _ := strings.Cut(body[off:], "\n")
		next := min(off+len(line)+1, len(body))
		switch t := strings.TrimSpace(line); {
		case strings.HasPrefix(t, "<!-- tapebox:begin") && start < 0:
			start = off
		case strings.HasPrefix(t, "<!-- tapebox:end") && start >= 0 && end < 0:
			end = next
		}
		off = next
	}
	switch {
	case start >= 0 && end >= 0:
		return start, end, true, nil
	case start >= 0:
		return 0, 0, false, fmt.Errorf("the body has a %q line but no %q line after it: put it back, or remove both (TapeBox then adds its part at the end)", "<!-- tapebox:begin", bodyEnd)
	case strings.Contains(body, "<!-- tapebox:end"):
		return 0, 0, false, fmt.Errorf("the body has a %q line but no %q line before it: put it back, or remove both (TapeBox then adds its part at the end)", bodyEnd, "<!-- tapebox:begin")
	}
	i := strings.Index(body, legacyMade)
	if !strings.HasPrefix(strings.TrimLeft(body, "\n"), "# ") || i < 0 {
		return 0, 0, false, nil
	}
	end = paragraphEnd(body, i+len("\n## How it was made\n\n"))
	if rest := strings.TrimLeft(body[end:], "\n"); strings.HasPrefix(rest, legacyLicense) {
		end = paragraphEnd(body, len(body)-len(rest))
	}
	return 0, end, true, nil
}

// paragraphEnd is the offset after the last line of the paragraph at from.
func paragraphEnd(s string, from int) int {
	if i := strings.Index(s[from:], "\n\n"); i >= 0 {
		return from + i + 1
	}
	return len(s)
}

// tapesCount is "1 tape" or "n tapes".
func tapesCount(n int64) string {
	if n == 1 {
		return "1 tape"
	}
	return fmt.Sprintf("%d tapes", n)
}
