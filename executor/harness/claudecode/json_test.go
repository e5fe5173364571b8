package claudecode

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdJSON is encoding/json's encoding of v without HTML escaping, indented by indent when
// it is not empty, without Encode's newline: what this package wrote before it encoded
// by hand.
func stdJSON(t *testing.T, v any, indent string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	require.NoError(t, enc.Encode(v))
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// TestJSONTextMatchesJSON: the KillShell and TaskStop answers keep their key order, and
// Read's image block its sorted keys, with encoding/json's bytes.
func TestJSONTextMatchesJSON(t *testing.T) {
	for _, s := range []string{"", "sleep 9 && echo '<done>' & wait", "\"\\\x00\n\u2028 é \xff"} {
		assert.Equal(t, stdJSON(t, struct {
			Message string `json:"message"`
			ShellID string `json:"shell_id"`
		}{"Successfully killed shell: " + s, s}, ""), jsonStrings("message", "Successfully killed shell: "+s, "shell_id", s))
		assert.Equal(t, stdJSON(t, struct {
			Message  string `json:"message"`
			TaskID   string `json:"task_id"`
			TaskType string `json:"task_type"`
			Command  string `json:"command"`
		}{s, "b1", "local_bash", s}, ""), jsonStrings("message", s, "task_id", "b1", "task_type", "local_bash", "command", s))
		img := map[string]any{"type": "image", "source": map[string]string{"type": "base64", "data": s, "media_type": "image/png"}}
		assert.Equal(t, stdJSON(t, img, ""), jsonText(img))
	}
}

// TestEncodeNotebookMatchesJSON: a notebook after an edit is written with encoding/json's
// bytes at one space of indent.
func TestEncodeNotebookMatchesJSON(t *testing.T) {
	for _, src := range []string{
		`{"cells":[{"cell_type":"code","id":"c1","metadata":{"tags":["<x>&"]},"source":["print(1)\n","x = 1e-7"],"execution_count":3,` +
			`"outputs":[{"output_type":"stream","name":"stdout","text":["1\n"]},{"output_type":"execute_result","data":{"text/plain":["1e+21"]},"metadata":{},"execution_count":3}]},` +
			`{"cell_type":"markdown","id":"m1","metadata":{},"source":"# t \u2028 \u00e9 \\ \""}],"metadata":{"kernelspec":{"display_name":"Python 3","name":"python3"},"language_info":{"version":"3.12.1"}},"nbformat":4,"nbformat_minor":5}`,
		`{"cells":[],"metadata":{},"nbformat":4,"nbformat_minor":0,"extra":[1.5,-0,1e21,123456789,null,true,false,[],{}]}`,
	} {
		var nb map[string]any
		require.NoError(t, json.Unmarshal([]byte(src), &nb))
		cells, _ := nb["cells"].([]any)
		nb["cells"] = append(cells, map[string]any{"cell_type": "code", "metadata": map[string]any{}, "source": "new", "execution_count": nil, "outputs": []any{}})
		got, err := encodeNotebook(nb)
		require.NoError(t, err)
		assert.Equal(t, stdJSON(t, nb, " "), got)
	}
}
