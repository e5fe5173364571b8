package opencode

import (
	"strings"

	"github.com/tapebox/tapebox/internal/grammar"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// patch draws an apply_patch call ({"patchText": ...}): one to three hunks (adds, deletes,
// updates with several chunks, context headers, end-of-file markers, moves), and the
// inputs opencode's lenient parser reads its own way: text around the markers, a heredoc,
// lines without a prefix, updates without @@, a patch with no hunk, CRLF patches, paths
// absolute or relative, missing files and directories, chunks that fail halfway.
func (g *gen) patch() {
	r := g.r
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	var classes []string
	for range 1 + r.IntN(3) {
		classes = append(classes, g.hunk(&b))
	}
	end := "*** End Patch"
	text := ""
	switch r.IntN(36) {
	case 0:
		end = ""
		classes = append(classes, "no-end")
	case 1:
		end += "\n"
		classes = append(classes, "end-newline")
	case 2:
		b.Reset()
		b.WriteString("*** Begin Patch\n")
		classes = append(classes, "empty-patch")
	case 3:
		b.Reset()
		b.WriteString(grammar.Line(r) + "\n")
		classes = append(classes, "not-a-patch")
	case 4:
		b.Reset()
		b.WriteString("*** Begin Patch\n" + grammar.Line(r) + "\n")
		classes = append(classes, "no-hunks")
	case 5:
		text = "Here is the patch:\n"
		classes = append(classes, "leading-text")
	case 6:
		text = "<<'EOF'\n"
		end += "\nEOF"
		classes = append(classes, "heredoc")
	case 7:
		end = "*** End Patch\n*** Begin Patch\n*** End Patch"
		classes = append(classes, "second-envelope")
	}
	text += b.String() + end
	if grammar.Chance(r, 0.04) {
		text = strings.ReplaceAll(text, "\n", "\r\n")
		classes = append(classes, "crlf-patch")
	}
	g.add(fakeprovider.Call("apply_patch", map[string]any{"patchText": text}), append([]string{"patch"}, classes...)...)
}

// patchPath returns p as a patch names it: relative mostly, absolute now and then.
func (g *gen) patchPath(p string) (string, string) {
	if grammar.Chance(g.r, 0.25) {
		return g.cwd + "/" + p, "+absolute"
	}
	return p, ""
}

// newPath returns a path for a new file: plain, unicode, spaces, deep new directories.
func (g *gen) newPath() string {
	r := g.r
	p := grammar.Name(r)
	switch r.IntN(5) {
	case 0:
		p = "new/" + grammar.Word(r) + "/" + grammar.Word(r) + "/" + p
	case 1:
		if len(g.dirs) > 0 {
			p = grammar.Pick(r, g.dirs...) + "/" + p
		}
	}
	return p
}

// hunk writes one file's hunk and returns its class.
func (g *gen) hunk(b *strings.Builder) string {
	r := g.r
	w := r.IntN(100)
	if w >= 32 && len(g.known()) == 0 && grammar.Chance(r, 0.7) {
		// Every file of the start is changed (its content unknown here): an update would
		// name a missing file, and fail the whole patch, more often than a model does.
		w = 0
	}
	switch {
	case w < 20: // add
		p := g.newPath()
		class := "add"
		k := g.known()
		switch {
		case grammar.Chance(r, 0.12) && len(k) > 0:
			p, class = k[r.IntN(len(k))].Path, "add-over-existing"
		case grammar.Chance(r, 0.05) && len(g.dirs) > 0:
			p, class = grammar.Pick(r, g.dirs...), "add-over-dir"
		case grammar.Chance(r, 0.05) && len(k) > 0:
			p, class = k[r.IntN(len(k))].Path+"/under.txt", "add-under-file" // fails while written
		}
		g.touched[p] = true
		pp, c := g.patchPath(p)
		b.WriteString("*** Add File: " + pp + "\n")
		n := r.IntN(5)
		if n == 0 {
			class += "+empty"
		}
		for range n {
			b.WriteString("+" + grammar.Line(r) + "\n")
			if grammar.Chance(r, 0.05) {
				b.WriteString(grammar.Line(r) + "\n") // no "+": skipped
				class += "+unprefixed"
			}
		}
		if grammar.Chance(r, 0.1) {
			b.WriteString("+\n")
			class += "+blank-last"
		}
		return class + c
	case w < 32: // delete
		class := "delete"
		var p string
		k := g.known()
		switch {
		case grammar.Chance(r, 0.12) && len(g.dirs) > 0:
			p, class = grammar.Pick(r, g.dirs...), "delete-dir"
		case grammar.Chance(r, 0.15) || len(k) == 0:
			p, class = "missing-"+grammar.Word(r)+".txt", "delete-missing"
		default:
			f := k[r.IntN(len(k))]
			p, class = f.Path, "delete-"+f.Class
		}
		g.touched[p] = true
		pp, c := g.patchPath(p)
		b.WriteString("*** Delete File: " + pp + "\n")
		return class + c
	}
	k := g.known()
	if len(k) == 0 || grammar.Chance(r, 0.07) {
		p, class := "missing-"+grammar.Word(r)+".txt", "update-missing"
		if grammar.Chance(r, 0.3) && len(g.dirs) > 0 {
			p, class = grammar.Pick(r, g.dirs...), "update-dir"
		}
		pp, c := g.patchPath(p)
		b.WriteString("*** Update File: " + pp + "\n@@\n-" + grammar.Line(r) + "\n+" + grammar.Line(r) + "\n")
		return class + c
	}
	f := k[r.IntN(len(k))]
	g.touched[f.Path] = true
	pp, c := g.patchPath(f.Path)
	b.WriteString("*** Update File: " + pp + "\n")
	class := "update-" + f.Class + c
	if grammar.Chance(r, 0.15) {
		to := g.newPath()
		g.touched[to] = true
		tp, _ := g.patchPath(to)
		b.WriteString("*** Move to: " + tp + "\n")
		class += "+move"
	}
	if grammar.Chance(r, 0.04) {
		return class + "+no-chunks" // opencode rewrites the file, a last line end added
	}
	b.WriteString(g.chunks(f.Content, &class))
	return class
}

// chunks writes the @@ chunks of an update of content: lines replaced, added and removed
// with some context, a context header, an end-of-file marker; or lines not in the file.
func (g *gen) chunks(content string, class *string) string {
	r := g.r
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	// A model writes the lines of a CRLF file without their "\r" (it rarely sees it).
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	var b strings.Builder
	if content == "" || grammar.Chance(r, 0.08) {
		*class += "+not-found"
		b.WriteString("@@\n " + grammar.Line(r) + "\n-" + grammar.Line(r) + "\n+" + grammar.Line(r) + "\n")
		return b.String()
	}
	nChunks := 1 + r.IntN(3)
	pos := 0
	for c := 0; c < nChunks && pos < len(lines); c++ {
		at := pos + r.IntN(min(len(lines)-pos, 40))
		ctxBefore := min(at-pos, r.IntN(3))
		header := "@@"
		if grammar.Chance(r, 0.2) && at-ctxBefore-1 >= pos && lines[at-ctxBefore-1] != "" {
			header = "@@ " + lines[at-ctxBefore-1]
			*class += "+context-header"
		}
		b.WriteString(header + "\n")
		for i := at - ctxBefore; i < at; i++ {
			l := lines[i]
			if grammar.Chance(r, 0.05) {
				l = "  " + strings.TrimSpace(l) + " "
				*class += "+loose-context"
			}
			b.WriteString(" " + l + "\n")
		}
		del := min(len(lines)-at, r.IntN(3))
		for i := at; i < at+del; i++ {
			b.WriteString("-" + lines[i] + "\n")
		}
		for range r.IntN(3) {
			b.WriteString("+" + grammar.Line(r) + "\n")
		}
		if del == 0 && ctxBefore == 0 {
			b.WriteString("+" + grammar.Line(r) + "\n")
		}
		if grammar.Chance(r, 0.04) {
			b.WriteString("\n") // a blank line, no prefix: opencode skips it
			*class += "+blank-unprefixed"
		}
		end := at + del
		after := min(len(lines)-end, r.IntN(3))
		for i := end; i < end+after; i++ {
			b.WriteString(" " + lines[i] + "\n")
		}
		if end+after == len(lines) && grammar.Chance(r, 0.5) {
			b.WriteString("*** End of File\n")
			*class += "+eof"
		}
		pos = end + after
	}
	if grammar.Chance(r, 0.07) {
		b.WriteString("@@\n-" + grammar.Line(r) + "\n+x\n")
		*class += "+fails-halfway"
	}
	return b.String()
}
