package checkpoint

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzTmpTime reads the time of temporary record names: any name is read
// without a panic, a name in the format Save writes gives back the time it
// was made with, and a name that gives a time ends in ".json.tmp" or
// ".log.tmp".
func FuzzTmpTime(f *testing.F) {
	f.Add("run-1", int64(1764489600123456789), "0123456789abcdef", "")
	f.Add("a.b", int64(1), "x", "run-1.0123456789abcdef.json.tmp")
	f.Add("", int64(-5), "", "..json.tmp")
	f.Add("r", int64(9), "-", "r.9-.json.tmp.json.tmp")
	f.Fuzz(func(t *testing.T, execID string, nanos int64, hex, raw string) {
		at, ok := tmpTime(raw)
		if ok && (!strings.HasSuffix(raw, ".json.tmp") && !strings.HasSuffix(raw, ".log.tmp") || at.UnixNano() <= 0) {
			t.Fatalf("tmpTime(%q) = %v, true", raw, at)
		}
		if nanos <= 0 || strings.Contains(hex, ".") { // Save writes 16 hex digits
			return
		}
		for _, suffix := range []string{".json.tmp", ".log.tmp"} {
			name := execID + "." + strconv.FormatInt(nanos, 10) + "-" + hex + suffix
			at, ok = tmpTime(name)
			if !ok || !at.Equal(time.Unix(0, nanos)) {
				t.Fatalf("tmpTime(%q) = %v, %v; want %v", name, at, ok, time.Unix(0, nanos))
			}
		}
	})
}
