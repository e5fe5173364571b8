package action

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// ErrBinary is returned by ReadFile for a file that is not text.
var ErrBinary = errors.New("binary file")

// binaryExts are extensions the harnesses refuse to read as text, whatever the bytes.
var binaryExts = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`.mp3 .wav .flac .ogg .aac .m4a .wma .aiff .opus
		.mp4 .avi .mov .wmv .flv .mkv .webm .m4v .mpeg .mpg
		.zip .tar .gz .bz2 .7z .rar .xz .z .tgz .iso .zst
		.exe .dll .so .dylib .bin .o .a .obj .lib .app .msi .deb .rpm
		.doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp
		.ttf .otf .woff .woff2 .eot
		.pyc .pyo .class .jar .war .ear .node .wasm .rlib
		.sqlite .sqlite3 .db .mdb .idx
		.psd .ai .eps .sketch .fig .xd .blend .3ds .max
		.swf .fla .lockb .dat .data .bmp .ico .tiff .tif .heic .heif .avif`) {
		binaryExts[e] = true
	}
}

// IsBinary reports whether a file counts as binary: by its extension, or by a NUL byte
// (or invalid UTF-8 in most of) its first 8 KiB.
func IsBinary(path string, head []byte) bool {
	if binaryExts[strings.ToLower(filepath.Ext(path))] {
		return true
	}
	if len(head) > 8192 {
		head = head[:8192]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n == 1 && len(head) >= utf8.UTFMax {
			bad++
		}
		head = head[n:]
	}
	return bad > 32
}

// FileText is a text file read for a Read tool.
type FileText struct {
	// Lines are the requested lines (from Offset, at most Limit), without "\n". A file that
	// ends in "\n" has an empty last line, as the harnesses count it.
	Lines []string
	// Offset is the 1-based number of the first line in Lines.
	Offset int
	// Total is the number of lines in the whole file (0 for an empty file).
	Total int
	Size  int64
}

// ReadFile reads lines [offset, offset+limit) of a text file (offset 1-based; 0 is 1;
// limit 0 means all). It returns fs.ErrNotExist for a missing file (wrapped), ErrBinary
// for a binary one, and an error for a directory.
func ReadFile(path string, offset, limit int) (FileText, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(err, syscall.EISDIR) {
			return FileText{}, fmt.Errorf("read %s: is a directory", path)
		}
		return FileText{}, fmt.Errorf("read %s: %w", path, err)
	}
	if IsBinary(path, b) {
		return FileText{}, fmt.Errorf("read %s: %w", path, ErrBinary)
	}
	if offset < 1 {
		offset = 1
	}
	ft := FileText{Offset: offset, Size: int64(len(b))}
	if len(b) == 0 {
		return ft, nil
	}
	all := strings.Split(string(b), "\n")
	ft.Total = len(all)
	if offset > len(all) {
		return ft, nil
	}
	end := len(all)
	if limit > 0 && offset-1+limit < end {
		end = offset - 1 + limit
	}
	ft.Lines = all[offset-1 : end]
	return ft, nil
}

// WriteFile writes content to path, creating parent directories, and reports whether the
// file is new. An existing file keeps its mode.
func WriteFile(path, content string) (created bool, err error) {
	mode := fs.FileMode(0o644)
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return false, fmt.Errorf("write %s: is a directory", path)
	case err == nil:
		mode = st.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		created = true
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, fmt.Errorf("write %s: %w", path, err)
		}
	default:
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return created, nil
}

// Edit replaces Old with New in a file: the single occurrence, or every one with All.
type Edit struct {
	Old string
	New string
	All bool
}

// EditErrorKind says why an edit could not be made.
type EditErrorKind int

// The ways an edit fails.
const (
	// EditNotFound: Old is not in the file.
	EditNotFound EditErrorKind = iota + 1
	// EditAmbiguous: Old occurs Count times and All is false.
	EditAmbiguous
	// EditNoChange: Old equals New.
	EditNoChange
	// EditFileMissing: the file does not exist (and Old is not empty).
	EditFileMissing
	// EditFileExists: Old is empty (create a file) but the file has content.
	EditFileExists
	// EditOverlap: Old of a later edit is part of the New of an earlier one.
	EditOverlap
)

// EditError is an edit that could not be made; nothing was written.
type EditError struct {
	Kind  EditErrorKind
	Path  string
	Index int // which edit, 0-based
	Old   string
	Count int
}

func (e *EditError) Error() string {
	switch e.Kind {
	case EditNotFound:
		return fmt.Sprintf("edit %s: string to replace not found: %q", e.Path, e.Old)
	case EditAmbiguous:
		return fmt.Sprintf("edit %s: %d matches of the string to replace: %q", e.Path, e.Count, e.Old)
	case EditNoChange:
		return fmt.Sprintf("edit %s: old and new strings are the same", e.Path)
	case EditFileMissing:
		return fmt.Sprintf("edit %s: file does not exist", e.Path)
	case EditFileExists:
		return fmt.Sprintf("edit %s: cannot create, file already exists", e.Path)
	case EditOverlap:
		return fmt.Sprintf("edit %s: old string of edit %d is part of an earlier new string", e.Path, e.Index)
	}
	return fmt.Sprintf("edit %s: failed", e.Path)
}

// EditResult is the file before and after a successful EditFile.
type EditResult struct {
	Before, After string
	Created       bool
}

// EditFile applies edits in order, all or nothing. An edit with an empty Old on a missing
// or empty file creates it with New.
func EditFile(path string, edits []Edit) (EditResult, error) {
	var res EditResult
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if len(edits) == 0 || edits[0].Old != "" {
			return res, &EditError{Kind: EditFileMissing, Path: path}
		}
		res.Created = true
	case err != nil:
		return res, fmt.Errorf("edit %s: %w", path, err)
	}
	res.Before = string(b)
	text := res.Before
	var applied []string
	for i, e := range edits {
		if e.Old == e.New {
			return res, &EditError{Kind: EditNoChange, Path: path, Index: i, Old: e.Old}
		}
		if e.Old == "" {
			if strings.TrimSpace(text) != "" {
				return res, &EditError{Kind: EditFileExists, Path: path, Index: i}
			}
			text = e.New
			applied = append(applied, e.New)
			continue
		}
		for _, prev := range applied {
			if strings.Contains(prev, e.Old) {
				return res, &EditError{Kind: EditOverlap, Path: path, Index: i, Old: e.Old}
			}
		}
		n := strings.Count(text, e.Old)
		switch {
		case n == 0:
			return res, &EditError{Kind: EditNotFound, Path: path, Index: i, Old: e.Old}
		case n > 1 && !e.All:
			return res, &EditError{Kind: EditAmbiguous, Path: path, Index: i, Old: e.Old, Count: n}
		case e.All:
			text = strings.ReplaceAll(text, e.Old, e.New)
		default:
			text = strings.Replace(text, e.Old, e.New, 1)
		}
		applied = append(applied, e.New)
	}
	res.After = text
	if _, err := WriteFile(path, text); err != nil {
		return res, fmt.Errorf("edit %s: %w", path, err)
	}
	return res, nil
}
