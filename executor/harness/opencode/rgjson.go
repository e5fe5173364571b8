package opencode

import (
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxRecord is the longest line of ripgrep's JSON output opencode reads (bytes); a longer
// one fails the whole search with errRecord.
const maxRecord = 65536

// errRecord is opencode's error for a match record longer than maxRecord.
const errRecord = "Ripgrep JSON record exceeded 65536 bytes"

// rgRecordLen is the length of ripgrep's JSON record of a match (rg --json, searching "."):
// the path ("./" + rel), the line with its end, its number and byte offset, and each
// match of re in it with its start and end. It returns 0 when re is nil.
func rgRecordLen(rel, line string, n, offset int, re *regexp.Regexp) int {
	if re == nil {
		return 0
	}
	size := len(`{"type":"match","data":{"path":,"lines":,"line_number":,"absolute_offset":,"submatches":[]}}`)
	size += rgData("./"+rel) + rgData(line) + len(strconv.Itoa(n)) + len(strconv.Itoa(offset))
	body := strings.TrimSuffix(line, "\n")
	for i, m := range re.FindAllStringIndex(body, -1) {
		if i > 0 {
			size++ // ,
		}
		size += len(`{"match":,"start":,"end":}`) + rgData(body[m[0]:m[1]]) + len(strconv.Itoa(m[0])) + len(strconv.Itoa(m[1]))
	}
	return size
}

// rgData is the length of ripgrep's {"text":...} for s, or {"bytes":BASE64} when s is not
// UTF-8; the text escaped as serde_json escapes it.
func rgData(s string) int {
	if !utf8.ValidString(s) {
		return len(`{"bytes":""}`) + base64.StdEncoding.EncodedLen(len(s))
	}
	n := len(`{"text":""}`)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20:
			n += 6
		default:
			n++
		}
	}
	return n
}
