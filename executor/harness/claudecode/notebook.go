package claudecode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/tapebox/tapebox/executor/action"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

type notebookInput struct {
	NotebookPath string `json:"notebook_path"`
	CellID       string `json:"cell_id"`
	NewSource    string `json:"new_source"`
	CellType     string `json:"cell_type"`
	EditMode     string `json:"edit_mode"`
}

var cellIndexID = regexp.MustCompile(`^cell-(\d+)$`)

func (s *session) notebookEdit(_ context.Context, call tape.ToolCall, rec *tape.ToolResult) tape.ToolResult {
	var in notebookInput
	if r, ok := decodeWrite(call, rec, &in, "notebook_path"); !ok {
		return r
	}
	mode := in.EditMode
	if mode == "" {
		mode = "replace"
	}
	if !strings.HasSuffix(in.NotebookPath, ".ipynb") {
		return asRecorded(toolUseError(call, "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool."), rec)
	}
	if mode != "replace" && mode != "insert" && mode != "delete" {
		return asRecorded(toolUseError(call, "Edit mode must be replace, insert, or delete."), rec)
	}
	if mode == "insert" && in.CellType == "" {
		return asRecorded(toolUseError(call, "Cell type is required when using edit_mode=insert."), rec)
	}
	path := s.env.Path(in.NotebookPath)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return asRecorded(toolUseError(call, "Notebook file does not exist."), rec)
	}
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	var nb map[string]any
	if err := jsonlex.Unmarshal(b, &nb); err != nil {
		return asRecorded(toolUseError(call, "Notebook is not valid JSON."), rec)
	}
	cells, _ := nb["cells"].([]any)
	idx := 0
	if in.CellID == "" {
		if mode != "insert" {
			return harness.Text(call, "Cell ID must be specified when not inserting a new cell.", true)
		}
	} else {
		idx = -1
		for i, c := range cells {
			if m, ok := c.(map[string]any); ok && m["id"] == in.CellID {
				idx = i
				break
			}
		}
		if idx < 0 {
			m := cellIndexID.FindStringSubmatch(in.CellID)
			if m == nil {
				return harness.Text(call, fmt.Sprintf("Cell with ID \"%s\" not found in notebook.", in.CellID), true)
			}
			idx, _ = strconv.Atoi(m[1])
			if idx >= len(cells) {
				return harness.Text(call, fmt.Sprintf("Cell with index %d does not exist in notebook.", idx), true)
			}
		}
		if mode == "insert" {
			idx++
		}
	}
	outID := in.CellID
	switch mode {
	case "delete":
		cells = append(cells[:idx], cells[idx+1:]...)
	case "insert":
		cell := map[string]any{"cell_type": in.CellType, "metadata": map[string]any{}, "source": in.NewSource}
		if nbAtLeast(nb, 4, 5) {
			outID = action.NewTaskID("", 12)
			cell["id"] = outID
		} else {
			outID = ""
		}
		if in.CellType != "markdown" {
			cell["execution_count"] = nil
			cell["outputs"] = []any{}
		}
		cells = append(cells[:idx], append([]any{cell}, cells[idx:]...)...)
	default:
		cell, _ := cells[idx].(map[string]any)
		if cell == nil {
			return harness.Text(call, fmt.Sprintf("Cell with index %d does not exist in notebook.", idx), true)
		}
		cell["source"] = in.NewSource
		if in.CellType != "" {
			cell["cell_type"] = in.CellType
		}
		if cell["cell_type"] == "code" {
			cell["execution_count"] = nil
			cell["outputs"] = []any{}
		}
	}
	nb["cells"] = cells
	out, err := encodeNotebook(nb)
	if err != nil {
		return harness.Text(call, err.Error(), true)
	}
	if _, err := action.WriteFile(path, out); err != nil {
		return harness.Text(call, err.Error(), true)
	}
	switch mode {
	case "delete":
		return harness.Text(call, "Deleted cell "+in.CellID, false)
	case "insert":
		if outID == "" {
			return harness.Text(call, "Inserted a new cell with "+in.NewSource, false)
		}
		return harness.Text(call, "Inserted cell "+outID+" with "+in.NewSource, false)
	}
	return harness.Text(call, "Updated cell "+in.CellID+" with "+in.NewSource, false)
}

// encodeNotebook writes nb indented by one space, without HTML escaping: the bytes of an
// encoding/json Encoder with SetIndent("", " "), without its newline (json_test.go).
func encodeNotebook(nb map[string]any) (string, error) {
	b, err := jsonlex.AppendValue(nil, nb, " ")
	return string(b), err
}

func nbAtLeast(nb map[string]any, major, minor int) bool {
	ma, _ := nb["nbformat"].(float64)
	mi, _ := nb["nbformat_minor"].(float64)
	return int(ma) > major || (int(ma) == major && int(mi) >= minor)
}
