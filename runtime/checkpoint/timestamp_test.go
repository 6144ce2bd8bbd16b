package checkpoint

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// civilDate agrees with the time package on every day of the years 0 to
// 9999.
func TestCivilDateEveryDay(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(unixYear0), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	require.Equal(t, int64(unixYear10000), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	days := int64(unixYear10000-unixYear0) / 86400
	require.Equal(t, int64(3652425), days)
	for d := range days {
		y, m, day := time.Unix(unixYear0+d*86400, 0).UTC().Date()
		gy, gm, gd := civilDate(uint(d))
		if int(gy) != y || int(gm) != int(m) || int(gd) != day {
			t.Fatalf("civilDate(%d) = %04d-%02d-%02d, want %04d-%02d-%02d", d, gy, gm, gd, y, m, day)
		}
	}
}

// appendTime writes what time.Time's MarshalJSON writes, and fails where
// it fails.
func TestAppendTimeMatchesMarshalJSON(t *testing.T) {
	t.Parallel()
	plus := time.FixedZone("", 5*3600+30*60)
	for _, tm := range []time.Time{
		{},
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(0, 3, 1, 0, 0, 0, 1, time.UTC),
		time.Date(0, 12, 31, 12, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(100, 2, 28, 0, 0, 0, 0, time.UTC),
		time.Date(100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(400, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 2, 29, 1, 2, 3, 400, time.UTC),
		time.Date(1900, 2, 28, 23, 59, 59, 0, time.UTC),
		time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 59, 59, 100000000, time.UTC),
		time.Date(2025, 12, 31, 23, 59, 59, 120000000, time.UTC),
		time.Date(2026, 11, 30, 9, 33, 15, 238031925, time.UTC),
		time.Date(2026, 4, 30, 0, 0, 0, 10, time.UTC),
		time.Date(2100, 2, 28, 0, 0, 0, 0, time.UTC),
		time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2025, 1, 2, 3, 4, 5, 600, plus),
		time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("GMT", 0)),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("", 2*3600)),
		time.Date(0, 1, 1, 0, 30, 0, 0, time.UTC).In(time.FixedZone("", -3600)),
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
		time.Now(),
		time.Now().UTC(),
		time.Now().Round(time.Second).UTC(),
		time.Unix(0, 0),
	} {
		want, err := tm.MarshalJSON()
		got, ok := appendTime([]byte("x"), tm)
		if err != nil {
			assert.False(t, ok, "%v: MarshalJSON fails with %v", tm, err)
			assert.Equal(t, "x", string(got), "dst is left as it was")
			continue
		}
		require.True(t, ok, "%v", tm)
		assert.Equal(t, "x"+string(want), string(got), "%v", tm)
	}
}

// FuzzAppendTime compares appendTime with time.Time's MarshalJSON for any
// instant, in UTC, in a fixed zone and in the local zone.
func FuzzAppendTime(f *testing.F) {
	f.Add(int64(1795944795), int64(238031925), 0)
	f.Add(int64(unixYear0), int64(0), 3600)
	f.Add(int64(unixYear10000-1), int64(999999999), -3600)
	f.Add(int64(951782400), int64(100), 24*3600)
	f.Add(int64(-1), int64(1), 1)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		tm := time.Unix(sec, nsec)
		for _, zoned := range []time.Time{tm.UTC(), tm.In(time.FixedZone("", offset%(200*3600))), tm} {
			want, err := zoned.MarshalJSON()
			got, ok := appendTime(nil, zoned)
			if ok != (err == nil) || ok && string(got) != string(want) {
				t.Fatalf("appendTime(%v) = %s, %v; MarshalJSON = %s, %v", zoned, got, ok, want, err)
			}
		}
	})
}
