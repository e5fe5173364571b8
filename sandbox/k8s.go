package sandbox

import (
	"context"
	"fmt"
)

func openK8s(ctx context.Context, spec Spec, opts Options) (*Sandbox, error) {
	return nil, fmt.Errorf("open sandbox %s: %w: the k8s backend is not built yet", spec, ErrBadSpec)
}
