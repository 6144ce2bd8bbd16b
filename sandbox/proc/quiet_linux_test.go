//go:build linux

package proc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The raw reads and writes of a call's pipes behave as an *os.File's: a
// write larger than the pipe holds waits for the reader and arrives
// whole; a read waits for data; the writer's end closing is EOF; a
// deadline ends a waiting read with os.ErrDeadlineExceeded and leaves
// the pipe usable; closing the file under a waiting read is os.ErrClosed.
func TestQuietPipes(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	qr, qw := quietRead(r), quietWrite(w)
	require.IsType(t, &quietReader{}, qr, "os.Pipe's files are non-blocking")
	require.IsType(t, &quietWriter{}, qw)

	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, past a pipe's 64 KiB
	wrote := make(chan error, 1)
	go func() {
		n, err := qw.Write(big)
		if err == nil && n != len(big) {
			err = io.ErrShortWrite
		}
		wrote <- err
	}()
	got := make([]byte, len(big))
	_, err = io.ReadFull(qr, got)
	require.NoError(t, err)
	require.NoError(t, <-wrote)
	assert.True(t, bytes.Equal(big, got), "a write past the pipe's buffer arrives whole")

	require.NoError(t, r.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err = qr.Read(got)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, r.SetReadDeadline(time.Time{}))
	_, err = qw.Write([]byte("x"))
	require.NoError(t, err)
	n, err := qr.Read(got)
	require.NoError(t, err)
	assert.Equal(t, "x", string(got[:n]), "the pipe is usable after a deadline")

	require.NoError(t, w.Close())
	_, err = qr.Read(got)
	assert.ErrorIs(t, err, io.EOF)
	require.NoError(t, r.Close())

	r, w, err = os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	qr = quietRead(r)
	read := make(chan error, 1)
	go func() {
		_, err := qr.Read(got)
		read <- err
	}()
	time.Sleep(10 * time.Millisecond) // most likely waiting by then; either way the read ends closed
	require.NoError(t, r.Close())
	err = <-read
	assert.True(t, errors.Is(err, os.ErrClosed), "closed under the read: %v", err)

	bf, err := os.CreateTemp(t.TempDir(), "blocking")
	require.NoError(t, err)
	defer bf.Close()
	assert.Same(t, bf, quietRead(bf), "a file that is not a non-blocking pipe is read as it is")
}
