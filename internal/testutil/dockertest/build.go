package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// MiniImage is the tag of the sandbox image with the mini agent (internal/testutil/tapebox-mini)
// built in statically at /usr/local/bin/tapebox-mini: an agent for a fresh container where
// no Node.js is. MiniImage builds it (the module's go toolchain, then Build).
const MiniImage = "tapebox/fork-mini:test"

// BuildMini builds MiniImage from SandboxImage and returns its tag; it skips or fails tb as
// Image does when the engine or the sandbox image is missing.
func BuildMini(tb testing.TB) string {
	tb.Helper()
	Image(tb, SandboxImage)
	bin := filepath.Join(tb.TempDir(), "tapebox-mini")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/tapebox/tapebox/internal/testutil/tapebox-mini")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build tapebox-mini: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		tb.Fatal(err)
	}
	return Build(tb, MiniImage, "FROM "+SandboxImage+"\nCOPY tapebox-mini /usr/local/bin/tapebox-mini\n",
		map[string][]byte{"tapebox-mini": data}, "tapebox-mini")
}
