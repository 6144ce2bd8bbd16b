package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// Kind and Impl name what Factory builds.
const (
	Kind = "workspace.Workspace"
	Impl = "local"
)

// Settings are the settings of a "workspace.Workspace"/"local" resource.
type Settings struct {
	// Root is the workspace's directory; required. It is expanded by the
	// document's loader, so "${base}/data" is the directory data beside the
	// document. A relative root is taken from the working directory.
	Root string `json:"root"`
	// Create makes a missing root (with its parents); nil means true.
	Create *bool `json:"create,omitempty"`
	// MaxFileBytes caps the size of a file read or written; 0 means
	// DefaultMaxFileBytes.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
}

// Factory returns the factory of kind "workspace.Workspace", impl "local".
// Its value is a *Local; the runtime closes it with the deployment.
func Factory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: Kind, Impl: Impl}, newFromInput)
}

func newFromInput(ctx context.Context, in resource.Input) (any, error) {
	op := fmt.Sprintf("build workspace %q", in.Name)
	if err := ctx.Err(); err != nil {
		return nil, fault.FromContext(err, op)
	}
	s, err := resource.DecodeTyped[Settings](in.Settings)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "settings")
	}
	if strings.TrimSpace(s.Root) == "" {
		return nil, fault.New(fault.Validation, op, "settings.root is required")
	}
	root := s.Root
	if in.Loader != nil {
		if root, err = in.Loader.Expand(s.Root); err != nil {
			return nil, fault.Wrap(fault.Validation, err, op, "settings.root %q", s.Root)
		}
	}
	mustExist := s.Create != nil && !*s.Create
	ws, err := NewLocalWithConfig(root, Config{MustExist: mustExist, MaxFileBytes: s.MaxFileBytes})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return ws, nil
}
