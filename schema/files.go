package schema

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
)

// FileResult is the outcome of validating one file.
type FileResult struct {
	Path string
	// Err is nil for a valid tape; otherwise a *ValidationError, a *SyntaxError, the error
	// that kept the file from being read, or the context's error for a file not reached.
	Err error
}

// ValidateFile reads the file at path and validates it.
func ValidateFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read tape: %w", err)
	}
	return Validate(data)
}

// ValidateFiles validates the files at paths on GOMAXPROCS goroutines and returns one
// result per path, in the order of paths. At most GOMAXPROCS files are in memory at once.
// When ctx is done, files not yet started get ctx's error.
func ValidateFiles(ctx context.Context, paths []string) []FileResult {
	results := make([]FileResult, len(paths))
	for i, p := range paths {
		results[i].Path = p
	}
	workers := min(runtime.GOMAXPROCS(0), len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i].Err = ValidateFile(paths[i])
			}
		})
	}
	for i := range paths {
		if err := ctx.Err(); err != nil {
			results[i].Err = err
			continue
		}
		select {
		case next <- i:
		case <-ctx.Done():
			results[i].Err = ctx.Err()
		}
	}
	close(next)
	wg.Wait()
	return results
}
