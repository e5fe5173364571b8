package dataset

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/prices"

	"github.com/tapebox/tapebox/internal/testutil/treetest"
)

func TestCardMarshalParse(t *testing.T) {
	c := &Card{
		License:        "mit",
		PrettyName:     "x",
		Tags:           []string{"a"},
		SizeCategories: []string{"n<1K"},
		Configs:        []CardConfig{{ConfigName: configTapes, Default: true, DataFiles: []DataFiles{{Split: "train", Path: "data/tapes/train-*.parquet"}}}},
		DatasetInfo: []ConfigInfo{{ConfigName: configTapes, Features: tapesTable.features(),
			Splits: []SplitInfo{{Name: "train", NumBytes: 10, NumExamples: 2}}, DownloadSize: 5, DatasetSize: 10}},
		Body: "# Title\n\ntext\n",
	}
	data, err := c.Marshal()
	require.NoError(t, err)
	s := string(data)
	require.True(t, strings.HasPrefix(s, "---\nlicense: mit\n"), s)
	for _, want := range []string{
		"configs:\n  - config_name: tapes\n    data_files:\n      - split: train\n        path: data/tapes/train-*.parquet\n    default: true\n",
		"      - name: tool_names\n        list: string\n",
		"      - name: started_at\n        dtype: timestamp[us, tz=UTC]\n",
		"    splits:\n      - name: train\n        num_bytes: 10\n        num_examples: 2\n    download_size: 5\n    dataset_size: 10\n---\n\n# Title\n",
	} {
		assert.Contains(t, s, want)
	}
	back, err := ParseCard(data)
	require.NoError(t, err)
	require.NotNil(t, back.meta, "the YAML is kept, for Marshal")
	back.meta = nil
	assert.Equal(t, c, back)

	crlf, err := ParseCard([]byte(strings.ReplaceAll(s, "\n", "\r\n")))
	require.NoError(t, err)
	assert.Equal(t, c.DatasetInfo, crlf.DatasetInfo)
	onlyMeta, err := ParseCard([]byte("---\nlicense: mit\n---"))
	require.NoError(t, err)
	assert.Equal(t, "mit", onlyMeta.License)
}

func TestSizeCategory(t *testing.T) {
	for n, want := range map[int64]string{0: "n<1K", 999: "n<1K", 1000: "1K<n<10K", 10_000: "10K<n<100K", 5_000_000: "1M<n<10M", 2_000_000_000: "n>1B"} {
		assert.Equal(t, want, sizeCategory(n), "%d", n)
	}
}

func TestCardBody(t *testing.T) {
	inputs := append(smallCorpus(t, 6, 51), goldenInputs(t)...)
	dir, _ := export(t, inputs, ExportOptions{Format: Both, MadeWith: "tapebox test"})
	c, err := LoadCard(dir)
	require.NoError(t, err)
	for _, want := range []string{
		"| train | " + itoa(int64(len(inputs))) + " |",
		"- Harnesses: ", "claude-code 2.1.332", "- Models: ", "- Providers (wire formats): ",
		"`tapes`: `task`, `labels`, `tape_json`",
		"`steps`: `tools_json`, `params_json`, `new_messages_json`",
		"load_dataset(\"OWNER/NAME\", \"steps\", split=\"train\")",
		"(tapebox test)", "Arrow IPC streams",
	} {
		assert.Contains(t, c.Body, want)
	}
}

func FuzzParseCard(f *testing.F) {
	f.Add([]byte("---\nlicense: mit\n---\nbody"))
	f.Add([]byte("---\nconfigs:\n  - config_name: tapes\n---\n"))
	f.Add([]byte("no front matter"))
	f.Add([]byte("---\n# c\nlanguage: en\nextra: &a [x]\ntags: *a\n---\n" + bodyBegin + "\nx\n" + bodyEnd + "\nmine\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\nsize_categories: &s [n<1K]\ntags: *s\nconfigs: *s\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCard(data)
		if err != nil {
			return
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("a parsed card does not marshal: %v", err)
		}
		back, err := ParseCard(out)
		if err != nil {
			t.Fatalf("a marshalled card does not parse: %v\n%s", err, out)
		}
		again, err := back.Marshal()
		if err != nil {
			t.Fatalf("a card does not marshal again: %v", err)
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("a second parse and marshal changes the card:\n%s\n%s", out, again)
		}
	})
}

// TestCardMergeKeepsAuthorEdits: a card edited by hand between two exports keeps the
// author's YAML fields (in their place, with their comments and their form) and their
// paragraphs around TapeBox's part; the export rewrites what it owns and the fields it is
// given, and an export that changes nothing changes no byte of the card.
func TestCardMergeKeepsAuthorEdits(t *testing.T) {
	inputs := smallCorpus(t, 4, 81)
	dir, _ := export(t, inputs[:3], ExportOptions{})
	path := filepath.Join(dir, cardFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	card := string(data)
	require.Contains(t, card, "\n"+bodyBegin+"\n# TapeBox agent tapes\n")
	require.True(t, strings.HasSuffix(card, "\n"+bodyEnd+"\n"), card[len(card)-200:])

	field := "license: unknown\n# who labelled the runs\nannotations_creators:\n  - machine-generated\nlanguage: en\n"
	intro := "Runs of our agents on the team's repositories, March 2025.\n"
	citation := "## Citation\n\nPlease cite the team.\n"
	edited := strings.Replace(card, "license: unknown\n", field, 1)
	edited = strings.Replace(edited, "---\n\n"+bodyBegin, "---\n\n"+intro+"\n"+bodyBegin, 1)
	edited += "\n" + citation
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
	requireValid(t, dir)

	export(t, inputs, ExportOptions{Out: dir, Card: CardFields{License: "Apache-2.0", TaskCategories: []string{"text-generation"}}})
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	merged := string(data)
	for _, want := range []string{
		"---\nlicense: apache-2.0\n# who labelled the runs\nannotations_creators:\n  - machine-generated\nlanguage: en\npretty_name: TapeBox agent tapes\ntask_categories:\n  - text-generation\ntags:\n",
		"---\n\n" + intro + "\n" + bodyBegin + "\n# TapeBox agent tapes\n",
		"License: `apache-2.0`.\n" + bodyEnd + "\n\n" + citation,
		"| train | 4 |",
	} {
		assert.Contains(t, merged, want)
	}
	assert.Equal(t, 1, strings.Count(merged, intro))
	assert.Equal(t, 1, strings.Count(merged, bodyBegin))
	requireValid(t, dir)
	c, err := LoadCard(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"en"}, c.Language)
	assert.Equal(t, int64(4), c.DatasetInfo[0].Splits[0].NumExamples)

	// Nothing given, nothing changed: the same bytes.
	export(t, inputs, ExportOptions{Out: dir})
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, merged, string(data))

	// A field given replaces the author's value, in its place.
	export(t, inputs, ExportOptions{Out: dir, Card: CardFields{Language: []string{"en", "fr"}, Tags: []string{"mine"}, PrettyName: "Team runs"}})
	c, err = LoadCard(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"en", "fr"}, c.Language)
	assert.Equal(t, []string{"mine"}, c.Tags)
	assert.Equal(t, "apache-2.0", c.License, "kept from the card")
	assert.Contains(t, c.Body, bodyBegin+"\n# Team runs\n")
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "annotations_creators:\n  - machine-generated\nlanguage:\n  - en\n  - fr\npretty_name: Team runs\n")
}

// TestCardLegacyBody: a card TapeBox wrote before it marked its part keeps what its
// author added after it; the old part is replaced, not repeated.
func TestCardLegacyBody(t *testing.T) {
	dir, _ := export(t, smallCorpus(t, 2, 82), ExportOptions{})
	c, err := LoadCard(dir)
	require.NoError(t, err)
	start, end, ok, err := generatedPart(c.Body)
	require.NoError(t, err)
	require.True(t, ok)
	inner := strings.TrimSuffix(strings.TrimPrefix(c.Body[start:end], bodyBegin+"\n"), bodyEnd+"\n")
	i := strings.Index(inner, "License: not given yet")
	require.Positive(t, i)
	legacy := inner[:i] + legacyLicense + "; the tapes' content comes from the agents' tasks and repositories.\n" +
		"\nOur own notes.\n\n## Access\n\nAsk first.\n"
	c.Body = legacy
	require.NoError(t, c.Save(dir))

	export(t, smallCorpus(t, 2, 82), ExportOptions{Out: dir})
	c, err = LoadCard(dir)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(c.Body, "## How it was made"))
	assert.NotContains(t, c.Body, legacyLicense)
	assert.True(t, strings.HasSuffix(c.Body, bodyEnd+"\n\nOur own notes.\n\n## Access\n\nAsk first.\n"), c.Body)
	assert.True(t, strings.HasPrefix(c.Body, bodyBegin+"\n# TapeBox agent tapes\n"))
}

func TestMergeBody(t *testing.T) {
	gen := "# T\n\ngenerated\n"
	block := bodyBegin + "\n" + gen + bodyEnd + "\n"
	tests := []struct {
		name, old, want, err string
	}{
		{"new card", "", block, ""},
		{"ours only", block, block, ""},
		{"old ours", bodyBegin + "\n# T\n\nold counts\n" + bodyEnd + "\n", block, ""},
		{"author around", "Intro.\n\n" + bodyBegin + "\nold\n" + bodyEnd + "\n\nOutro.\n", "Intro.\n\n" + block + "\nOutro.\n", ""},
		{"author only", "# Mine\n\nAll mine.\n", "# Mine\n\nAll mine.\n\n" + block, ""},
		{"markers indented", "  " + bodyBegin + "\nold\n  " + bodyEnd + "\nOutro.\n", block + "\nOutro.\n", ""},
		{"no end", "Intro.\n" + bodyBegin + "\nold\n", "", "no \"<!-- tapebox:end -->\" line after it"},
		{"no begin", "Intro.\nold\n" + bodyEnd + "\n", "", "no \"<!-- tapebox:begin\" line before it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mergeBody(tt.old, gen)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			again, err := mergeBody(got, gen)
			require.NoError(t, err)
			assert.Equal(t, got, again, "a second merge changes nothing")
		})
	}
}

// TestExportRefusesCardItCannotMerge: a README.md that cannot be parsed, or whose
// markers are broken, fails the export before anything is written, rather than being
// replaced by a card without the author's text.
func TestExportRefusesCardItCannotMerge(t *testing.T) {
	inputs := smallCorpus(t, 1, 83)
	for name, card := range map[string]string{
		"no front matter": "# My dataset\n\nWords.\n",
		"bad yaml":        "---\nlicense: [\n---\n",
		"no end marker":   "---\nlicense: mit\n---\n\n" + bodyBegin + "\n# T\n",
		"license twice":   "---\nlicense: mit\nlicense: apache-2.0\n---\n",
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "dataset")
			require.NoError(t, os.MkdirAll(out, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(out, cardFile), []byte(card), 0o644))
			_, err := Export(t.Context(), inputs, ExportOptions{Out: out})
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join(out, cardFile))
			assert.Equal(t, []string{cardFile}, treetest.Files(t, out), "nothing written")
			data, err := os.ReadFile(filepath.Join(out, cardFile))
			require.NoError(t, err)
			assert.Equal(t, card, string(data))
		})
	}
	_, err := Export(t.Context(), inputs, ExportOptions{Out: filepath.Join(t.TempDir(), "d"), Card: CardFields{License: "Apache 2.0"}})
	require.ErrorContains(t, err, `license "Apache 2.0": want a license id`)
	_, err = Export(t.Context(), inputs, ExportOptions{Out: filepath.Join(t.TempDir(), "d"), Card: CardFields{Language: []string{" "}}})
	require.ErrorContains(t, err, `language " "`)
}

func TestParseLicense(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"apache-2.0", "apache-2.0", ""},
		{"Apache-2.0", "apache-2.0", ""},
		{"MIT", "mit", ""},
		{"CC-BY-4.0", "cc-by-4.0", ""},
		{"other", "other", ""},
		{"unknown", "unknown", ""},
		{"GPL-3.0-or-later", "GPL-3.0-or-later", ""},
		{"gpl-3.0-or-later", "GPL-3.0-or-later", "" /* spelled as SPDX does */},
		{"0BSD", "0BSD", ""},
		{"not-a-license", "", `"not-a-license" is neither`},
		{"MIT-2.0", "", "is neither"},
		{"LicenseRef-acme-1.0", "LicenseRef-acme-1.0", ""},
		{"openrail++", "openrail++", ""},
		{"", "", "want a license id"},
		{"Apache 2.0", "", "want a license id"},
		{"MIT OR Apache-2.0", "", "want a license id"},
		{"https://example.com/license", "", "want a license id"},
		{"-mit", "", "want a license id"},
		{strings.Repeat("a", 65), "", "want a license id"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLicense(tt.in)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestParseCardAuthorFields: the Hub takes a string or a list for these fields; so does
// ParseCard, and Marshal writes back the form the author chose.
func TestParseCardAuthorFields(t *testing.T) {
	src := "---\n# ours\nlicense:\n  - mit\n  - apache-2.0\nlanguage: en\ntags: agents\npretty_name:\nextra: {a: 1}\n---\nbody\n"
	c, err := ParseCard([]byte(src))
	require.NoError(t, err)
	assert.Equal(t, "mit, apache-2.0", c.License)
	assert.Equal(t, []string{"en"}, c.Language)
	assert.Equal(t, []string{"agents"}, c.Tags)
	assert.Empty(t, c.PrettyName)
	assert.Equal(t, "body\n", c.Body)
	out, err := c.Marshal()
	require.NoError(t, err)
	assert.Equal(t, "---\n# ours\nlicense:\n  - mit\n  - apache-2.0\nlanguage: en\ntags: agents\nsize_categories: []\nconfigs: []\ndataset_info: []\nextra: {a: 1}\n---\n\nbody\n", string(out),
		"pretty_name, empty, is dropped; a missing field goes after the card's field before it")

	for _, bad := range []struct{ src, err string }{
		{"---\nlicense: {a: b}\n---\n", "license: line 1: want a string or a list of strings"},
		{"---\nlanguage: [[en]]\n---\n", "language: line 1: want a list of strings"},
		{"---\n- a\n---\n", "not a mapping"},
		{"---\ntags: [a]\ntags: [b]\n---\n", "tags is given twice"},
		{"---\nconfigs: 3\n---\n", "configs:"},
	} {
		_, err := ParseCard([]byte(bad.src))
		assert.ErrorContains(t, err, bad.err, bad.src)
	}
	// An alias whose anchor was in a value that TapeBox replaced gets the value itself.
	anchored, err := ParseCard([]byte("---\nsize_categories: &s [n<1K]\ntags: *s\n---\n"))
	require.NoError(t, err)
	anchored.SizeCategories = []string{"1K<n<10K"}
	out, err = anchored.Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(out), "tags: [n<1K]\n")
	_, err = ParseCard(out)
	require.NoError(t, err)

	empty, err := ParseCard([]byte("---\n---\nbody\n"))
	require.NoError(t, err)
	assert.Equal(t, "body\n", empty.Body)
}

// The card says what the tapes cost and, when a model has no price, that their cost is
// unknown and which model it is: the golden tapes call fake-model; the real Claude Code tape
// (claude-opus-5-5) is priced.
func TestCardCost(t *testing.T) {
	inputs, err := ExpandInputs([]string{"../testdata/replay", "../viewer/testdata/claude-code.json"})
	require.NoError(t, err)
	dir, _ := export(t, inputs, ExportOptions{Format: Parquet})
	c, err := LoadCard(dir)
	require.NoError(t, err)
	assert.Regexp(t, `- Cost at list prices of `+prices.Default().Date+` \(`+"`cost_usd`"+`\): \$0\.\d\d for 1 tape; unknown for 2 tapes, whose model has no price in the table \(`+"`cost_usd`"+` is null\): fake-model \(2\)`, c.Body)
}
