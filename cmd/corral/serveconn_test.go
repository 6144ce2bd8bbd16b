//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 11.4.5
// corral serve closes a keep-alive connection that stays idle for
// --idle-timeout: a client that asks once and then holds its connection
// open does not keep it.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	_, base := startServe(t, serveFixture(t), "--addr", "127.0.0.1:0", "--idle-timeout", "100ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute))) // a failure, not a hang
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the idle connection was closed by the server")
}

// REF 11.4.5
// --idle-timeout defaults to two minutes and must be positive.
func TestServeFlagsIdleTimeout(t *testing.T) {
	o, err := parseServeFlags([]string{"d.yaml"})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, o.idle)
	for _, bad := range []string{"0s", "-1s", "soon"} {
		_, err := parseServeFlags([]string{"d.yaml", "--idle-timeout", bad})
		assert.Error(t, err, bad)
	}
}
