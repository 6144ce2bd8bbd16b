//go:build unix

package workspace_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A named pipe in the workspace is not a file to read nor a directory to
// list: both are Validation errors at once, never a wait for a writer
// (opening a pipe for reading blocks, whatever the context says).
func TestNamedPipeIsNotRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newLocal(t, workspace.Config{})
	require.NoError(t, syscall.Mkfifo(filepath.Join(ws.Root(), "pipe"), 0o640))
	_, err := ws.Read(ctx, "pipe")
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "not a regular file")
	_, err = ws.List(ctx, "pipe")
	require.ErrorIs(t, err, fault.Validation)
	ok, err := ws.Exists(ctx, "pipe")
	require.NoError(t, err)
	assert.True(t, ok)
}
