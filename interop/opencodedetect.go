package interop

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// checkOpenCodeExport says why the JSON b is not what `opencode export SESSION` prints
// (nil when it is): an object whose info names a session id (ses_…) and whose messages
// each have an info (a message id, msg_…, the session's id as sessionID, the role user or
// assistant) and parts (objects naming their type). The reason names the field by its
// JSON pointer. Auto tells OpenCode's exports by it, so that another tool's chat export
// ({"info":…,"messages":[{"role":…,"content":…}]}) is not read as one.
func checkOpenCodeExport(b []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	info, err := jsonObject(top, "info", "/info")
	if err != nil {
		return err
	}
	sid, err := jsonString(info, "id", "/info/id")
	if err != nil {
		return err
	}
	if !openCodeIDRE(sid, "ses_") {
		return fmt.Errorf("/info/id: %q is not an OpenCode session id (ses_…)", sid)
	}
	raw, ok := top["messages"]
	if !ok {
		return errors.New("/messages: missing")
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil || msgs == nil {
		return errors.New("/messages: not an array")
	}
	for i, m := range msgs {
		at := fmt.Sprintf("/messages/%d", i)
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(m, &msg); err != nil || msg == nil {
			return fmt.Errorf("%s: not an object", at)
		}
		mi, err := jsonObject(msg, "info", at+"/info")
		if err != nil {
			return err
		}
		id, err := jsonString(mi, "id", at+"/info/id")
		if err != nil {
			return err
		}
		if !openCodeIDRE(id, "msg_") {
			return fmt.Errorf("%s/info/id: %q is not an OpenCode message id (msg_…)", at, id)
		}
		of, err := jsonString(mi, "sessionID", at+"/info/sessionID")
		if err != nil {
			return err
		}
		if of != sid {
			return fmt.Errorf("%s/info/sessionID: %q, not the session's id %q", at, of, sid)
		}
		role, err := jsonString(mi, "role", at+"/info/role")
		if err != nil {
			return err
		}
		if role != "user" && role != "assistant" {
			return fmt.Errorf("%s/info/role: %q: neither user nor assistant", at, role)
		}
		raw, ok := msg["parts"]
		if !ok {
			return fmt.Errorf("%s/parts: missing", at)
		}
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil || parts == nil {
			return fmt.Errorf("%s/parts: not an array", at)
		}
		for j, p := range parts {
			var part map[string]json.RawMessage
			if err := json.Unmarshal(p, &part); err != nil || part == nil {
				return fmt.Errorf("%s/parts/%d: not an object", at, j)
			}
			if _, err := jsonString(part, "type", fmt.Sprintf("%s/parts/%d/type", at, j)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonObject is the object at key of obj; the error names it by pointer.
func jsonObject(obj map[string]json.RawMessage, key, pointer string) (map[string]json.RawMessage, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, fmt.Errorf("%s: missing", pointer)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil || out == nil {
		return nil, fmt.Errorf("%s: not an object", pointer)
	}
	return out, nil
}

// jsonString is the string at key of obj; the error names it by pointer.
func jsonString(obj map[string]json.RawMessage, key, pointer string) (string, error) {
	raw, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("%s: missing", pointer)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: not a string", pointer)
	}
	return s, nil
}

// claimsOpenCode says whether the JSON file at path begins as an OpenCode export: an
// object whose keys before its info are messages at most, and whose info's id is a session
// id (ses_…). It reads the file as a stream and stops there, so that a cut-off export
// still claims (and then fails Detect, naming why) while the other JSON files of a folder
// (Gemini CLI's logs.json, a dataset's metadata, tapes) do not, and cost a few tokens to
// tell.
func claimsOpenCode(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		switch key {
		case "messages": // before info in a re-encoding with sorted keys
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return false
			}
			continue
		case "info":
		default:
			return false
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return false
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return false
			}
			if k == "id" {
				v, err := dec.Token()
				s, ok := v.(string)
				return err == nil && ok && strings.HasPrefix(s, "ses_")
			}
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return false
			}
		}
		return false
	}
	return false
}
