package dataset

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/tapebox/tapebox/tape"
)

// ResultRow is one tape of a corpus replay (tapebox replay --corpus): what happened to it
// and how long its parts took. It is the row of the results table WriteResults writes.
type ResultRow struct {
	// Key names the tape in its corpus: its path relative to the corpus folder.
	Key string `parquet:"key"`
	// TapeID is the recording's meta.id ("" when the tape could not be read).
	TapeID string `parquet:"tape_id"`
	// State is "done" (the replay ran and was compared) or "failed" (an error, in Error).
	State string `parquet:"state"`
	// Verdict is compare's: "identical" or "differs"; "" for a failed tape.
	Verdict string `parquet:"verdict"`
	// Steps played, and executor restarts.
	Steps    int64 `parquet:"steps"`
	Restarts int64 `parquet:"executor_restarts"`
	// Attempts counts the starts of this tape: more than 1 after an interrupted run.
	Attempts int64 `parquet:"attempts"`
	// WallMS is the replay's wall time, ToolMS the tool execution time, ReadyMS the time to
	// a ready sandbox (created, started, executor in place), all in milliseconds.
	WallMS  float64 `parquet:"wall_ms"`
	ToolMS  float64 `parquet:"tool_ms"`
	ReadyMS float64 `parquet:"sandbox_ready_ms"`
	// Output is the replay tape's path ("" when none was written).
	Output string `parquet:"output"`
	// Error says why a tape failed; for a tape whose replay differs, compare's first
	// difference.
	Error string `parquet:"error"`
}

// WriteResults writes rows as one zstd Parquet file at path, through a temporary file in the
// same folder that is renamed when complete (tape.AtomicFile): a reader sees the old file or
// the new one. The rows are streamed: memory does not grow with their number.
func WriteResults(path string, rows iter.Seq2[ResultRow, error]) error {
	f, err := tape.CreateAtomic(path, 0o644)
	if err != nil {
		return fmt.Errorf("write results %s: %w", path, err)
	}
	defer f.Close()
	w := parquet.NewGenericWriter[ResultRow](f, parquet.Compression(parquetZstd),
		&parquet.WriterConfig{CreatedBy: CreatedBy("")},
		parquet.KeyValueMetadata(metaTable, "corpus_results"),
		parquet.KeyValueMetadata(metaVersion, datasetVersion))
	batch := make([]ResultRow, 0, 256)
	flush := func() error {
		if _, err := w.Write(batch); err != nil {
			return err
		}
		batch = batch[:0]
		return nil
	}
	for r, rerr := range rows {
		if rerr != nil {
			return fmt.Errorf("write results %s: %w", path, rerr)
		}
		if batch = append(batch, r); len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return fmt.Errorf("write results %s: %w", path, err)
			}
		}
	}
	if err := errors.Join(flush(), w.Close()); err != nil {
		return fmt.Errorf("write results %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("write results %s: %w", path, err)
	}
	return nil
}

// ReadResults reads a results table WriteResults wrote.
func ReadResults(path string) ([]ResultRow, error) {
	rows, err := parquet.ReadFile[ResultRow](path)
	if err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	return rows, nil
}

// IsDataset reports whether dir holds an exported dataset: a tapes table under
// data/tapes/.
func IsDataset(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "data", configTapes))
	return err == nil && fi.IsDir()
}
