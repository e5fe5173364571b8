package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/docker/docker/client"

	"github.com/tapebox/tapebox/sandbox"
)

// Endpoint is the Docker engine's address and where it was found.
type Endpoint struct {
	// Host is the engine's address: unix:///var/run/docker.sock, tcp://host:2376 ...
	Host string
	// From says where Host came from: "DOCKER_HOST", `context "NAME"` or "default".
	From string
	// TLSDir, when set, holds ca.pem, cert.pem and key.pem for the connection.
	TLSDir string
}

func (e Endpoint) String() string { return e.Host + " (" + e.From + ")" }

// ResolveEndpoint finds the Docker engine the way the docker CLI does: DOCKER_HOST, else the
// active context (DOCKER_CONTEXT, else currentContext in $DOCKER_CONFIG/config.json, by
// default ~/.docker/config.json; its endpoint is in contexts/meta/<sha256 of the name>/meta.json),
// else the default socket. getenv reads the environment (nil means os.Getenv).
func ResolveEndpoint(getenv func(string) string) (Endpoint, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if h := getenv("DOCKER_HOST"); h != "" {
		return Endpoint{Host: h, From: "DOCKER_HOST", TLSDir: getenv("DOCKER_CERT_PATH")}, nil
	}
	dir := getenv("DOCKER_CONFIG")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".docker")
	}
	name := getenv("DOCKER_CONTEXT")
	if name == "" {
		data, err := os.ReadFile(filepath.Join(dir, "config.json"))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return Endpoint{}, fmt.Errorf("read the docker CLI configuration: %w", err)
		default:
			var cfg struct {
				CurrentContext string `json:"currentContext"`
			}
			if err := json.Unmarshal(data, &cfg); err != nil {
				return Endpoint{}, fmt.Errorf("read the docker CLI configuration %s: %w", filepath.Join(dir, "config.json"), err)
			}
			name = cfg.CurrentContext
		}
	}
	if name == "" || name == "default" {
		return Endpoint{Host: client.DefaultDockerHost, From: "default"}, nil
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])
	metaPath := filepath.Join(dir, "contexts", "meta", hash, "meta.json")
	data, err := os.ReadFile(metaPath)
	if err != nil {
		return Endpoint{}, fmt.Errorf("docker context %q is active but its endpoint cannot be read (%w); run \"docker context use default\" or set DOCKER_HOST", name, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return Endpoint{}, fmt.Errorf("docker context %q: %s: %w", name, metaPath, err)
	}
	host := meta.Endpoints["docker"].Host
	if host == "" {
		return Endpoint{}, fmt.Errorf("docker context %q has no docker endpoint in %s; set DOCKER_HOST", name, metaPath)
	}
	ep := Endpoint{Host: host, From: fmt.Sprintf("context %q", name)}
	if tls := filepath.Join(dir, "contexts", "tls", hash, "docker"); isFile(filepath.Join(tls, "ca.pem")) {
		ep.TLSDir = tls
	}
	return ep, nil
}

// NewClient connects to the engine ResolveEndpoint finds, negotiates the API version and
// checks that it answers; the error wraps sandbox.ErrNoEngine when it does not.
func NewClient(ctx context.Context, getenv func(string) string) (*client.Client, Endpoint, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	ep, err := ResolveEndpoint(getenv)
	if err != nil {
		return nil, ep, err
	}
	opts := []client.Opt{client.WithHost(ep.Host), client.WithAPIVersionNegotiation()}
	if ep.TLSDir != "" {
		opts = append(opts, client.WithTLSClientConfig(filepath.Join(ep.TLSDir, "ca.pem"),
			filepath.Join(ep.TLSDir, "cert.pem"), filepath.Join(ep.TLSDir, "key.pem")))
	}
	if v := getenv("DOCKER_API_VERSION"); v != "" {
		opts = append(opts, client.WithVersion(v))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, ep, fmt.Errorf("connect to the Docker engine at %s: %w", ep, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, ep, fmt.Errorf("connect to the Docker engine at %s: %w (%v); start one or point DOCKER_HOST at one", ep, sandbox.ErrNoEngine, err)
	}
	cli.NegotiateAPIVersion(ctx)
	return cli, ep, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
