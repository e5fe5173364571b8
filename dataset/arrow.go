package dataset

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recordBuilder appends rows of one table to Arrow builders.
type recordBuilder struct {
	t *table
	b *array.RecordBuilder
	n int
}

func newRecordBuilder(t *table) *recordBuilder {
	return &recordBuilder{t: t, b: array.NewRecordBuilder(memory.DefaultAllocator, t.arrowSchema())}
}

// append adds one row (a TapeRow or StepRow value).
func (rb *recordBuilder) append(row reflect.Value) {
	for i, c := range rb.t.columns {
		v := row.Field(c.index)
		fb := rb.b.Field(i)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				fb.AppendNull()
				continue
			}
			v = v.Elem()
		}
		switch c.kind {
		case kString:
			sb := fb.(*array.StringBuilder)
			if v.Kind() == reflect.String {
				sb.Append(v.String())
			} else if c.nullable && v.IsNil() {
				sb.AppendNull()
			} else {
				if b := v.Bytes(); len(b) >= 1<<20 {
					// A whole tape: room for exactly it, not twice what the
					// buffer had (a builder grows by doubling).
					sb.BinaryBuilder.ReserveData(len(b))
				}
				sb.BinaryBuilder.Append(v.Bytes())
			}
		case kBinary:
			bb := fb.(*array.BinaryBuilder)
			if v.IsNil() && c.nullable {
				bb.AppendNull()
				continue
			}
			bb.ReserveData(v.Len()) // room for exactly the value: a snapshot can be tens of MB
			bb.Append(v.Bytes())
		case kInt64:
			fb.(*array.Int64Builder).Append(v.Int())
		case kFloat64:
			fb.(*array.Float64Builder).Append(v.Float())
		case kBool:
			fb.(*array.BooleanBuilder).Append(v.Bool())
		case kTimestamp:
			fb.(*array.TimestampBuilder).Append(arrow.Timestamp(v.Interface().(time.Time).UnixMicro()))
		case kStrings:
			lb := fb.(*array.ListBuilder)
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.StringBuilder)
			for j := range v.Len() {
				vb.Append(v.Index(j).String())
			}
		}
	}
	rb.n++
}

// flush returns the rows appended so far as a record batch and starts a new one.
func (rb *recordBuilder) flush() arrow.RecordBatch {
	rb.n = 0
	return rb.b.NewRecordBatch()
}

func (rb *recordBuilder) release() { rb.b.Release() }

// rowsFromRecord decodes a record batch of table t into rows of type R: a row type, or a
// projection of one (a struct whose fields carry some of the row type's parquet tags).
// The batch's schema must match t's (checkArrowSchema).
func rowsFromRecord[R any](t *table, rec arrow.RecordBatch) ([]R, error) {
	n := int(rec.NumRows())
	rows := make([]R, n)
	for _, c := range tableOf[R](t.name).columns {
		i := slices.IndexFunc(t.columns, func(tc column) bool { return tc.name == c.name })
		if i < 0 {
			return nil, fmt.Errorf("column %s: not in the %s table", c.name, t.name)
		}
		col := rec.Column(i)
		for r := range n {
			dst := reflect.ValueOf(&rows[r]).Elem().Field(c.index)
			if col.IsNull(r) {
				if !c.nullable {
					return nil, fmt.Errorf("column %s: null in row %d of a column that holds no nulls", c.name, r)
				}
				continue // zero: nil pointer or nil slice
			}
			if dst.Kind() == reflect.Pointer {
				dst.Set(reflect.New(dst.Type().Elem()))
				dst = dst.Elem()
			}
			switch c.kind {
			case kString:
				s := col.(*array.String).Value(r)
				if dst.Kind() == reflect.String {
					dst.SetString(s)
				} else {
					dst.SetBytes([]byte(s))
				}
			case kBinary:
				dst.SetBytes(bytes.Clone(col.(*array.Binary).Value(r)))
			case kInt64:
				dst.SetInt(col.(*array.Int64).Value(r))
			case kFloat64:
				dst.SetFloat(col.(*array.Float64).Value(r))
			case kBool:
				dst.SetBool(col.(*array.Boolean).Value(r))
			case kTimestamp:
				dst.Set(reflect.ValueOf(time.UnixMicro(int64(col.(*array.Timestamp).Value(r))).UTC()))
			case kStrings:
				l := col.(*array.List)
				start, end := l.ValueOffsets(r)
				vals := l.ListValues().(*array.String)
				out := make([]string, 0, end-start)
				for k := start; k < end; k++ {
					out = append(out, vals.Value(int(k)))
				}
				dst.Set(reflect.ValueOf(out))
			}
		}
	}
	return rows, nil
}

// checkArrowSchema reports how an Arrow file's schema differs from table t's.
func checkArrowSchema(t *table, s *arrow.Schema) error {
	want := t.arrowSchema()
	if s.NumFields() != want.NumFields() {
		return fmt.Errorf("schema has %d columns, the %s table has %d", s.NumFields(), t.name, want.NumFields())
	}
	for i, f := range s.Fields() {
		w := want.Field(i)
		if f.Name != w.Name || !arrow.TypeEqual(f.Type, w.Type) || f.Nullable != w.Nullable {
			return fmt.Errorf("column %d is %s %s (nullable %v), the %s table wants %s %s (nullable %v)",
				i, f.Name, f.Type, f.Nullable, t.name, w.Name, w.Type, w.Nullable)
		}
	}
	return nil
}
