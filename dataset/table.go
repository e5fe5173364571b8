package dataset

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
)

// The tables a dataset holds, one Hugging Face config each.
const (
	configTapes      = "tapes"
	configSteps      = "steps"
	configWorkspaces = "workspaces"
	configTraces     = "traces"
)

// configs lists the tables in the order the card shows them; the first is the default.
// A split has a workspaces table only when one of its tapes' start snapshots is in it, and
// a traces table only when it was exported with ExportOptions.Traces.
var configs = []string{configTapes, configSteps, configWorkspaces, configTraces}

// kind is a column's value type; it decides the Parquet, Arrow and Hugging Face types.
type kind int

const (
	kString    kind = iota // string, or []byte holding UTF-8 text (JSON)
	kInt64                 // int64
	kFloat64               // float64
	kBool                  // bool
	kTimestamp             // time.Time, microseconds, UTC
	kStrings               // []string, a list of strings
	kBinary                // []byte without the string option: bytes
)

// column describes one column of a table, derived from a row struct field.
type column struct {
	name     string
	kind     kind
	nullable bool
	text     bool         // long text or bytes: no Parquet page statistics
	json     bool         // each string holds a JSON value: the card's dtype is json
	index    int          // struct field index
	goType   reflect.Type // the field's type
}

// kinds gives each kind its feature in a Hugging Face card (dtype or list; the name is the
// column's) and its Arrow type.
var kinds = [...]struct {
	hf    Feature
	arrow arrow.DataType
}{
	kString:    {Feature{Dtype: "string"}, arrow.BinaryTypes.String},
	kInt64:     {Feature{Dtype: "int64"}, arrow.PrimitiveTypes.Int64},
	kFloat64:   {Feature{Dtype: "float64"}, arrow.PrimitiveTypes.Float64},
	kBool:      {Feature{Dtype: "bool"}, arrow.FixedWidthTypes.Boolean},
	kTimestamp: {Feature{Dtype: "timestamp[us, tz=UTC]"}, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	kStrings:   {Feature{List: "string"}, arrow.ListOf(arrow.BinaryTypes.String)},
	kBinary:    {Feature{Dtype: "binary"}, arrow.BinaryTypes.Binary},
}

// hfType is the column's feature in a Hugging Face card (dtype or list). A JSON column
// is stored as strings and described as the datasets library's Json feature (dtype json,
// or a list of json), which decodes each value.
func (c column) hfType() Feature {
	f := kinds[c.kind].hf
	f.Name = c.name
	if c.json {
		f = jsonFeature(f)
	}
	return f
}

// jsonFeature is f, a string or list of strings, as JSON values.
func jsonFeature(f Feature) Feature {
	switch {
	case f.Dtype == "string":
		f.Dtype = "json"
	case f.List == "string":
		f.List = "json"
	}
	return f
}

// cardFeatures turns the features a file's schema gives (where JSON is a string) into the
// table's card features: its JSON columns' dtype is json.
func (t *table) cardFeatures(fs []Feature) []Feature {
	for i, f := range fs {
		for _, c := range t.columns {
			if c.name == f.Name && c.json {
				fs[i] = jsonFeature(f)
			}
		}
	}
	return fs
}

// arrowType is the column's Arrow type.
func (c column) arrowType() arrow.DataType { return kinds[c.kind].arrow }

// table describes a row type R: its columns, in struct order.
type table struct {
	name    string
	columns []column
}

var (
	tapesTable      = tableOf[TapeRow](configTapes)
	stepsTable      = tableOf[StepRow](configSteps)
	workspacesTable = tableOf[WorkspaceRow](configWorkspaces)
	tracesTable     = tableOf[TraceRow](configTraces)
)

func tableFor(config string) *table {
	switch config {
	case configTraces:
		return tracesTable
	case configSteps:
		return stepsTable
	case configWorkspaces:
		return workspacesTable
	}
	return tapesTable
}

func tableOf[R any](name string) *table {
	rt := reflect.TypeFor[R]()
	t := &table{name: name}
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag := strings.Split(f.Tag.Get("parquet"), ",")
		opts := strings.Split(f.Tag.Get("dataset"), ",")
		c := column{name: tag[0], index: i, goType: f.Type, text: slices.Contains(opts, "text"), json: slices.Contains(opts, "json")}
		isString := false
		for _, opt := range tag[1:] {
			switch opt {
			case "optional":
				c.nullable = true
			case "string":
				isString = true
			}
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
			c.nullable = true
		}
		switch {
		case ft == reflect.TypeFor[time.Time]():
			c.kind = kTimestamp
		case ft == reflect.TypeFor[[]byte]() && !isString:
			c.kind, c.text = kBinary, true
		case ft.Kind() == reflect.String, ft == reflect.TypeFor[[]byte]():
			c.kind = kString
		case ft.Kind() == reflect.Int64:
			c.kind = kInt64
		case ft.Kind() == reflect.Float64:
			c.kind = kFloat64
		case ft.Kind() == reflect.Bool:
			c.kind = kBool
		case ft == reflect.TypeFor[[]string]():
			c.kind = kStrings
		default:
			panic(fmt.Sprintf("dataset: %s.%s: no column kind for %s", rt.Name(), f.Name, f.Type))
		}
		t.columns = append(t.columns, c)
	}
	return t
}

// parquetOptions are the writer options specific to the table.
func (t *table) parquetOptions() []parquet.WriterOption {
	var opts []parquet.WriterOption
	for _, c := range t.columns {
		if c.text {
			opts = append(opts, parquet.SkipPageStatistics(c.name), parquet.SkipPageBounds(c.name))
		}
	}
	return opts
}

// arrowSchema is the table's Arrow schema.
func (t *table) arrowSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(t.columns))
	for i, c := range t.columns {
		fields[i] = arrow.Field{Name: c.name, Type: c.arrowType(), Nullable: c.nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// features is the table's feature list for the card.
func (t *table) features() []Feature {
	out := make([]Feature, len(t.columns))
	for i, c := range t.columns {
		out[i] = c.hfType()
	}
	return out
}

// rowBytes is the Arrow in-memory size of a row (what Hugging Face calls num_bytes): 8
// bytes per number and timestamp, 1 per boolean, the bytes of a string plus its 4-byte
// offset, and for a list its 4-byte offset plus its strings. Validity bitmaps are not
// counted.
func (t *table) rowBytes(row reflect.Value) int64 {
	var n int64
	for _, c := range t.columns {
		v := row.Field(c.index)
		switch c.kind {
		case kString, kBinary:
			if v.Kind() == reflect.Pointer {
				if !v.IsNil() {
					n += int64(v.Elem().Len())
				}
			} else {
				n += int64(v.Len())
			}
			n += 4
		case kInt64, kFloat64, kTimestamp:
			n += 8
		case kBool:
			n++
		case kStrings:
			n += 4
			for i := range v.Len() {
				n += 4 + int64(v.Index(i).Len())
			}
		}
	}
	return n
}
