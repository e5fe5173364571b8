package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func contextMeta(name, host string) (path, data string) {
	sum := sha256.Sum256([]byte(name))
	return "contexts/meta/" + hex.EncodeToString(sum[:]) + "/meta.json",
		`{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
}

func TestResolveEndpoint(t *testing.T) {
	remotePath, remoteMeta := contextMeta("remote", "tcp://10.0.0.5:2375")
	otherPath, otherMeta := contextMeta("other", "unix:///run/other.sock")
	tlsPath, tlsMeta := contextMeta("secure", "tcp://10.0.0.6:2376")
	sum := sha256.Sum256([]byte("secure"))
	configDir := map[string]string{
		"config.json": `{"auths":{},"currentContext":"remote"}`,
		remotePath:    remoteMeta,
		otherPath:     otherMeta,
		tlsPath:       tlsMeta,
		"contexts/tls/" + hex.EncodeToString(sum[:]) + "/docker/ca.pem": "x",
	}
	tests := []struct {
		name    string
		env     map[string]string
		files   map[string]string // in the config dir
		home    bool              // the config dir is $HOME/.docker instead of $DOCKER_CONFIG
		want    Endpoint
		wantErr string
	}{
		{name: "DOCKER_HOST wins", env: map[string]string{"DOCKER_HOST": "tcp://1.2.3.4:2375", "DOCKER_CONTEXT": "other"}, files: configDir,
			want: Endpoint{Host: "tcp://1.2.3.4:2375", From: "DOCKER_HOST"}},
		{name: "current context", files: configDir, want: Endpoint{Host: "tcp://10.0.0.5:2375", From: `context "remote"`}},
		{name: "current context under HOME", files: configDir, home: true, want: Endpoint{Host: "tcp://10.0.0.5:2375", From: `context "remote"`}},
		{name: "DOCKER_CONTEXT over config", env: map[string]string{"DOCKER_CONTEXT": "other"}, files: configDir,
			want: Endpoint{Host: "unix:///run/other.sock", From: `context "other"`}},
		{name: "context with TLS", env: map[string]string{"DOCKER_CONTEXT": "secure"}, files: configDir,
			want: Endpoint{Host: "tcp://10.0.0.6:2376", From: `context "secure"`, TLSDir: "contexts/tls/" + hex.EncodeToString(sum[:]) + "/docker"}},
		{name: "default context", env: map[string]string{"DOCKER_CONTEXT": "default"}, files: configDir,
			want: Endpoint{Host: client.DefaultDockerHost, From: "default"}},
		{name: "no config", want: Endpoint{Host: client.DefaultDockerHost, From: "default"}},
		{name: "config without context", files: map[string]string{"config.json": `{"auths":{}}`},
			want: Endpoint{Host: client.DefaultDockerHost, From: "default"}},
		{name: "unknown context", env: map[string]string{"DOCKER_CONTEXT": "gone"}, files: configDir,
			wantErr: `docker context "gone" is active but its endpoint cannot be read`},
		{name: "bad config", files: map[string]string{"config.json": `{`}, wantErr: "config.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range tt.files {
				if tt.home {
					k = ".docker/" + k
				}
				files[k] = v
			}
			dir := tree(t, files)
			env := map[string]string{"HOME": dir}
			if !tt.home {
				env["DOCKER_CONFIG"] = dir
			}
			for k, v := range tt.env {
				env[k] = v
			}
			got, err := ResolveEndpoint(func(k string) string { return env[k] })
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want.TLSDir != "" {
				tt.want.TLSDir = dir + "/" + tt.want.TLSDir
			}
			assert.Equal(t, tt.want, got)
		})
	}
}
