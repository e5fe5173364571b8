package credscan

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Dir fails t for every file under dir that holds one of creds, naming the credential and
// the file, and returns how many files it read. A directory it cannot walk fails t too.
func Dir(t testing.TB, dir string, creds ...string) (files int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, c := range creds {
			if bytes.Contains(data, []byte(c)) {
				t.Errorf("credential %q found in %s", c, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("scan %s for credentials: %v", dir, err)
	}
	return files
}
