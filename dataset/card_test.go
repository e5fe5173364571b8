package dataset

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCard(data)
		if err != nil {
			return
		}
		if _, err := c.Marshal(); err != nil {
			t.Fatalf("a parsed card does not marshal: %v", err)
		}
	})
}
