package dataset

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"go.yaml.in/yaml/v3"

	"github.com/tapebox/tapebox/tape"
)

// cardFile is the dataset card's name in a dataset folder.
const cardFile = "README.md"

// Card is a Hugging Face dataset card: YAML metadata (the front matter) and a Markdown
// body. The metadata follows the Hub's schema: configs with data_files per split,
// dataset_info with features, splits, download_size and dataset_size.
//
// The card's author owns its descriptive fields (License, PrettyName, TaskCategories,
// Language, Tags), any other field, and the body outside the part TapeBox writes (between
// the tapebox:begin and tapebox:end comments); TapeBox owns the rest, which describes the
// files. A card read by ParseCard remembers its YAML: Marshal keeps the fields the Card
// type does not know, the order of the fields, their comments, and the YAML of an
// author's field whose value did not change (language: en stays a string).
type Card struct {
	// License is the license id; several, as a YAML list, are joined with ", ".
	License string `yaml:"license"`
	// PrettyName is the dataset's display name, the title of the body.
	PrettyName string `yaml:"pretty_name,omitempty"`
	// TaskCategories are Hub task ids (text-generation, ...).
	TaskCategories []string `yaml:"task_categories,omitempty"`
	// Language lists the languages of the data (ISO 639-1 codes such as en).
	Language       []string     `yaml:"language,omitempty"`
	Tags           []string     `yaml:"tags,omitempty"`
	SizeCategories []string     `yaml:"size_categories"`
	Configs        []CardConfig `yaml:"configs"`
	DatasetInfo    []ConfigInfo `yaml:"dataset_info"`
	// Body is the Markdown after the front matter.
	Body string `yaml:"-"`

	// meta is the front matter ParseCard read (a YAML document node), which Marshal
	// merges the fields into; nil for a new card.
	meta *yaml.Node
}

// CardConfig is one config (one table) and the files of each of its splits.
type CardConfig struct {
	ConfigName string      `yaml:"config_name"`
	DataFiles  []DataFiles `yaml:"data_files"`
	Default    bool        `yaml:"default,omitempty"`
}

// DataFiles names the files of one split, by a glob relative to the dataset folder.
type DataFiles struct {
	Split string `yaml:"split"`
	Path  string `yaml:"path"`
}

// ConfigInfo describes one config's columns and sizes.
type ConfigInfo struct {
	ConfigName   string      `yaml:"config_name"`
	Features     []Feature   `yaml:"features"`
	Splits       []SplitInfo `yaml:"splits"`
	DownloadSize int64       `yaml:"download_size"`
	DatasetSize  int64       `yaml:"dataset_size"`
}

// Feature is one column: a scalar Dtype, or List for a list of that dtype.
type Feature struct {
	Name  string `yaml:"name"`
	Dtype string `yaml:"dtype,omitempty"`
	List  string `yaml:"list,omitempty"`
}

// SplitInfo gives a split's row count and its uncompressed size in bytes (the Arrow
// in-memory size of its columns).
type SplitInfo struct {
	Name        string `yaml:"name"`
	NumBytes    int64  `yaml:"num_bytes"`
	NumExamples int64  `yaml:"num_examples"`
}

// CardFields are the descriptive fields of a dataset card, which its author owns. A field
// left empty keeps what the card in the folder has, or else TapeBox's default (license
// unknown, a pretty name and tags; no task categories or languages).
type CardFields struct {
	// License is a license id, checked and spelled by ParseLicense.
	License        string
	PrettyName     string
	TaskCategories []string
	Language       []string
	// Tags replace the card's tags (TapeBox's own included) when given.
	Tags []string
}

// check checks the fields and spells the license as the Hub does.
func (f *CardFields) check() error {
	if f.License != "" {
		l, err := ParseLicense(f.License)
		if err != nil {
			return err
		}
		f.License = l
	}
	for _, list := range []struct {
		name   string
		values []string
	}{{"task category", f.TaskCategories}, {"language", f.Language}, {"tag", f.Tags}} {
		for _, v := range list.values {
			if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "\n\r") {
				return fmt.Errorf("%s %q: want a word such as text-generation, en or agent-traces", list.name, v)
			}
		}
	}
	return nil
}

// CardOptions configures BuildCard.
type CardOptions struct {
	// MadeWith names the program, for the body ("tapebox 0.1.0").
	MadeWith string
	// Fields override the card's descriptive fields.
	Fields CardFields
}

// LicenseUnknown is the license of a card whose license nobody gave.
const LicenseUnknown = "unknown"

// BuildCard describes the data files in dir as a dataset card: the configs, the features
// read from each file's schema, the row counts and sizes from each file's footer (the
// num_bytes each Parquet shard records in its key-value metadata; Arrow files are read),
// and a body that counts harnesses, models and providers. An existing README.md is
// merged into: opts.Fields override its descriptive fields, the others are kept, as are
// its other fields and the text of its body outside the part TapeBox writes. A README.md
// that cannot be parsed is an error, not replaced.
func BuildCard(dir string, opts CardOptions) (*Card, error) {
	old, err := LoadCard(dir)
	if errors.Is(err, fs.ErrNotExist) {
		old = nil
	} else if err != nil {
		return nil, err
	}
	return buildCard(dir, opts, old)
}

// TracesDir is the folder of a dataset that holds the tapes' harness-native session files
// (tapebox dataset export --traces), in the layouts the Hub's trace viewer detects.
const TracesDir = "traces"

// countTraces counts the session files under dir/traces by harness folder.
func countTraces(dir string) (map[string]int64, error) {
	root := filepath.Join(dir, TracesDir)
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(path, ".jsonl") {
			rel, _ := filepath.Rel(root, path)
			first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			out[first]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the session files in %s: %w", root, err)
	}
	return out, nil
}

// buildCard is BuildCard with the existing card, or nil.
func buildCard(dir string, opts CardOptions, old *Card) (*Card, error) {
	f := opts.Fields
	if err := f.check(); err != nil {
		return nil, err
	}
	l, err := scanLayout(dir)
	if err != nil {
		return nil, err
	}
	c := &Card{
		License:    LicenseUnknown,
		PrettyName: "TapeBox agent tapes",
		Tags:       []string{"tapebox", "agent-traces", "tool-use", "llm-agents", "coding-agents"},
	}
	if old != nil {
		c.meta = old.meta
		c.License = cmp.Or(old.License, c.License)
		c.PrettyName = cmp.Or(old.PrettyName, c.PrettyName)
		c.TaskCategories, c.Language = old.TaskCategories, old.Language
		if len(old.Tags) > 0 {
			c.Tags = old.Tags
		}
	}
	c.License = cmp.Or(f.License, c.License)
	c.PrettyName = cmp.Or(f.PrettyName, c.PrettyName)
	for _, o := range []struct{ dst, src *[]string }{{&c.TaskCategories, &f.TaskCategories}, {&c.Language, &f.Language}, {&c.Tags, &f.Tags}} {
		if len(*o.src) > 0 {
			*o.dst = slices.Clone(*o.src)
		}
	}
	var st bodyStats
	for _, config := range configs {
		if len(l[config]) == 0 {
			continue
		}
		cc := CardConfig{ConfigName: config, Default: config == configTapes}
		info := ConfigInfo{ConfigName: config}
		for _, split := range l.splits(config) {
			ext, files := l.primary(config, split)
			if len(files) == 0 {
				continue
			}
			cc.DataFiles = append(cc.DataFiles, DataFiles{Split: split, Path: fmt.Sprintf("data/%s/%s-*.%s", config, split, ext)})
			si := SplitInfo{Name: split}
			for _, f := range files {
				fi, err := describeFile(f)
				if err != nil {
					return nil, err
				}
				if info.Features == nil {
					info.Features = fi.features
				} else if !slices.Equal(info.Features, fi.features) {
					return nil, fmt.Errorf("%s: its columns differ from those of the other %s files", f.path, config)
				}
				si.NumBytes += fi.numBytes
				si.NumExamples += fi.rows
				info.DownloadSize += f.size
			}
			info.Splits = append(info.Splits, si)
			info.DatasetSize += si.NumBytes
			st.rows(config, split, si.NumExamples)
			if config == configTapes {
				if err := st.tapes(split, files); err != nil {
					return nil, err
				}
			}
		}
		c.Configs = append(c.Configs, cc)
		c.DatasetInfo = append(c.DatasetInfo, info)
	}
	if len(c.Configs) == 0 {
		return nil, fmt.Errorf("%s: no data files under data/", dir)
	}
	c.SizeCategories = []string{sizeCategory(st.totalTapes())}
	c.Tags = agentTracesTag(c.Tags, len(l[configTraces]) > 0)
	if st.traces, err = countTraces(dir); err != nil {
		return nil, err
	}
	oldBody := ""
	if old != nil {
		oldBody = old.Body
	}
	if c.Body, err = mergeBody(oldBody, st.body(l, c, opts)); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, cardFile), err)
	}
	return c, nil
}

// fileInfo is what a data file's metadata says.
type fileInfo struct {
	features []Feature
	rows     int64
	numBytes int64
}

// describeFile reads a data file's schema and counts; a Parquet file's footer is enough,
// an Arrow stream is read through.
func describeFile(f shardFile) (fileInfo, error) {
	t := tableFor(f.config)
	if f.ext == "arrow" {
		fh, err := os.Open(f.path)
		if err != nil {
			return fileInfo{}, err
		}
		defer fh.Close()
		r, err := ipc.NewReader(fh)
		if err != nil {
			return fileInfo{}, fmt.Errorf("%s: %w", f.path, err)
		}
		defer r.Release()
		fi := fileInfo{}
		if fi.features, err = featuresOfArrow(r.Schema()); err != nil {
			return fileInfo{}, fmt.Errorf("%s: %w", f.path, err)
		}
		fi.features = t.cardFeatures(fi.features)
		switch f.config {
		case configTraces:
			err = countArrow[TraceRow](f, t, &fi)
		case configSteps:
			err = countArrow[StepRow](f, t, &fi)
		case configWorkspaces:
			err = countArrow[WorkspaceRow](f, t, &fi)
		default:
			err = countArrow[TapeRow](f, t, &fi)
		}
		return fi, err
	}
	p, err := openParquet(f.path)
	if err != nil {
		return fileInfo{}, err
	}
	defer p.Close()
	fi := fileInfo{rows: p.file.NumRows()}
	if fi.features, err = featuresOfParquet(p.file.Schema()); err != nil {
		return fileInfo{}, fmt.Errorf("%s: %w", f.path, err)
	}
	fi.features = t.cardFeatures(fi.features)
	v, ok := p.lookup(metaNumBytes)
	if !ok {
		return fileInfo{}, fmt.Errorf("%s: no %s in the key-value metadata (not written by tapebox?)", f.path, metaNumBytes)
	}
	if fi.numBytes, err = strconv.ParseInt(v, 10, 64); err != nil {
		return fileInfo{}, fmt.Errorf("%s: %s: %w", f.path, metaNumBytes, err)
	}
	return fi, nil
}

// countArrow counts the rows of an Arrow shard and their bytes.
func countArrow[R any](f shardFile, t *table, fi *fileInfo) error {
	return readArrow(f.path, t, func(_ int64, rows []R) error {
		for i := range rows {
			fi.rows++
			fi.numBytes += t.rowBytes(reflect.ValueOf(&rows[i]).Elem())
		}
		return nil
	})
}

// featuresOfParquet maps a Parquet schema to Hugging Face features.
func featuresOfParquet(s *parquet.Schema) ([]Feature, error) {
	var out []Feature
	for _, f := range s.Fields() {
		ft := Feature{Name: f.Name()}
		if f.Leaf() {
			d, err := parquetDtype(f)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name(), err)
			}
			ft.Dtype = d
		} else {
			lt := f.Type().LogicalType()
			if lt == nil {
				return nil, fmt.Errorf("column %s: a group that is not a LIST", f.Name())
			}
			if _, ok := lt.Value.(*format.ListType); !ok {
				return nil, fmt.Errorf("column %s: a group that is not a LIST", f.Name())
			}
			rep := f.Fields()
			if len(rep) != 1 || len(rep[0].Fields()) != 1 || !rep[0].Fields()[0].Leaf() {
				return nil, fmt.Errorf("column %s: a LIST of something other than scalars", f.Name())
			}
			d, err := parquetDtype(rep[0].Fields()[0])
			if err != nil {
				return nil, fmt.Errorf("column %s: element: %w", f.Name(), err)
			}
			ft.List = d
		}
		out = append(out, ft)
	}
	return out, nil
}

func parquetDtype(n parquet.Node) (string, error) {
	typ := n.Type()
	lt := typ.LogicalType()
	var ltv format.LogicalTypeValue
	if lt != nil {
		ltv = lt.Value
	}
	switch typ.Kind() {
	case parquet.ByteArray:
		if _, ok := ltv.(*format.StringType); ok {
			return "string", nil
		}
		if ltv == nil {
			return "binary", nil
		}
	case parquet.Int64:
		switch v := ltv.(type) {
		case nil:
			return "int64", nil
		case *format.IntType:
			if v.BitWidth == 64 && v.IsSigned {
				return "int64", nil
			}
		case *format.TimestampType:
			if _, ok := v.Unit.Value.(*format.MicroSeconds); ok && v.IsAdjustedToUTC {
				return "timestamp[us, tz=UTC]", nil
			}
		}
	case parquet.Double:
		if ltv == nil {
			return "float64", nil
		}
	case parquet.Boolean:
		if ltv == nil {
			return "bool", nil
		}
	}
	return "", fmt.Errorf("no Hugging Face dtype for %s %v", typ.Kind(), lt)
}

// featuresOfArrow maps an Arrow schema to Hugging Face features.
func featuresOfArrow(s *arrow.Schema) ([]Feature, error) {
	var out []Feature
	for _, f := range s.Fields() {
		ft := Feature{Name: f.Name}
		if l, ok := f.Type.(*arrow.ListType); ok {
			d, err := arrowDtype(l.Elem())
			if err != nil {
				return nil, fmt.Errorf("column %s: element: %w", f.Name, err)
			}
			ft.List = d
		} else {
			d, err := arrowDtype(f.Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
			ft.Dtype = d
		}
		out = append(out, ft)
	}
	return out, nil
}

func arrowDtype(t arrow.DataType) (string, error) {
	switch t.ID() {
	case arrow.STRING:
		return "string", nil
	case arrow.BINARY:
		return "binary", nil
	case arrow.INT64:
		return "int64", nil
	case arrow.FLOAT64:
		return "float64", nil
	case arrow.BOOL:
		return "bool", nil
	case arrow.TIMESTAMP:
		ts := t.(*arrow.TimestampType)
		if ts.Unit == arrow.Microsecond && ts.TimeZone == "UTC" {
			return "timestamp[us, tz=UTC]", nil
		}
	}
	return "", fmt.Errorf("no Hugging Face dtype for %s", t)
}

// TagAgentTraces is the tag of a dataset in the Hub's agent-traces format: a card has it
// exactly when the dataset has a traces config (TapeBox adds and removes it; the other
// tags are the author's).
const TagAgentTraces = "format:agent-traces"

// agentTracesTag adds TagAgentTraces to tags or removes it, as has says.
func agentTracesTag(tags []string, has bool) []string {
	i := slices.Index(tags, TagAgentTraces)
	switch {
	case has && i < 0:
		return append(slices.Clone(tags), TagAgentTraces)
	case !has && i >= 0:
		return slices.Delete(slices.Clone(tags), i, i+1)
	}
	return tags
}

// sizeCategory is the Hub's size bucket for n rows.
func sizeCategory(n int64) string {
	bounds := []struct {
		max  int64
		name string
	}{
		{1_000, "n<1K"}, {10_000, "1K<n<10K"}, {100_000, "10K<n<100K"}, {1_000_000, "100K<n<1M"},
		{10_000_000, "1M<n<10M"}, {100_000_000, "10M<n<100M"}, {1_000_000_000, "100M<n<1B"},
	}
	for _, b := range bounds {
		if n < b.max {
			return b.name
		}
	}
	return "n>1B"
}

// Marshal renders the card: "---", the YAML metadata, "---", the body. A card that
// ParseCard read keeps its YAML where the Card's fields leave it unchanged (see Card).
func (c *Card) Marshal() ([]byte, error) {
	var fresh yaml.Node
	if err := fresh.Encode(c); err != nil {
		return nil, fmt.Errorf("encode card: %w", err)
	}
	root := &fresh
	if c.meta != nil {
		root = c.merge(&fresh)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode card: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode card: %w", err)
	}
	b.WriteString("---\n\n")
	b.WriteString(c.Body)
	return b.Bytes(), nil
}

// Save writes the card to dir/README.md atomically.
func (c *Card) Save(dir string) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	if err := tape.WriteFileAtomic(filepath.Join(dir, cardFile), data); err != nil {
		return fmt.Errorf("write card: %w", err)
	}
	return nil
}

// ParseCard splits a dataset card into its YAML metadata and its body and decodes the
// metadata. Fields the Card type does not know are kept for Marshal, not decoded. An
// author's field may be a string or a list of strings, as the Hub allows (language: en).
func ParseCard(data []byte) (*Card, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil, errors.New("no YAML front matter: the card does not start with ---")
	}
	var meta, body string
	if after, ok := strings.CutPrefix(rest, "---"); ok && (after == "" || after[0] == '\n') {
		body = strings.TrimPrefix(after, "\n") // empty front matter
	} else if meta, body, ok = strings.Cut(rest, "\n---\n"); !ok {
		if meta, ok = strings.CutSuffix(rest, "\n---"); !ok {
			return nil, errors.New("the YAML front matter has no closing ---")
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(meta), &doc); err != nil {
		return nil, fmt.Errorf("YAML front matter: %w", err)
	}
	c := &Card{Body: strings.TrimPrefix(body, "\n")}
	m, err := metaMapping(&doc)
	if err != nil {
		return nil, fmt.Errorf("YAML front matter: %w", err)
	}
	if err := c.decode(m); err != nil {
		return nil, fmt.Errorf("YAML front matter: %w", err)
	}
	c.meta = &doc
	return c, nil
}

// LoadCard reads dir/README.md.
func LoadCard(dir string) (*Card, error) {
	data, err := os.ReadFile(filepath.Join(dir, cardFile))
	if err != nil {
		return nil, err
	}
	c, err := ParseCard(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, cardFile), err)
	}
	return c, nil
}
