package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
)

// Build builds an image tagged tag from a Dockerfile and the files beside it (name ->
// contents; executable when the name is in exec), with the classic builder and nothing
// pulled (FROM must name a local image). It skips or fails tb as Client does when no engine
// answers, and fails it when the build does.
func Build(tb testing.TB, tag, dockerfile string, files map[string][]byte, exec ...string) string {
	tb.Helper()
	cli := Client(tb)
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	add := func(name string, data []byte, mode int64) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)})
		tw.Write(data)
	}
	add("Dockerfile", []byte(dockerfile), 0o644)
	for name, data := range files {
		mode := int64(0o644)
		for _, e := range exec {
			if e == name {
				mode = 0o755
			}
		}
		add(name, data, mode)
	}
	tw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	resp, err := cli.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true,
		Labels: map[string]string{Label: "1"}, Version: build.BuilderV1})
	if err != nil {
		tb.Fatalf("build image %s: %v", tag, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var log bytes.Buffer
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			tb.Fatalf("build image %s: read the engine's answer: %v\n%s", tag, err, log.String())
		}
		log.WriteString(msg.Stream)
		if msg.Error != "" {
			tb.Fatalf("build image %s: %s\n%s", tag, msg.Error, log.String())
		}
	}
	return tag
}
