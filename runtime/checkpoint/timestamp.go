package checkpoint

import "time"

// appendTime appends t as time.Time's MarshalJSON writes it, RFC 3339 with
// nanoseconds in quotes; ok is false where MarshalJSON fails: a year
// outside 0..9999 or a zone offset of 24 hours or more.
func appendTime(dst []byte, t time.Time) ([]byte, bool) {
	if t.Location() == time.UTC {
		return appendUTC(dst, t)
	}
	start := len(dst)
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	s := dst[start+1:]
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' {
		return dst[:start], false
	}
	if s[len(s)-1] != 'Z' {
		c := s[len(s)-len("Z07:00")]
		hours := 10*int(s[len(s)-5]-'0') + int(s[len(s)-4]-'0')
		if ('0' <= c && c <= '9') || hours >= 24 {
			return dst[:start], false
		}
	}
	return append(dst, '"'), true
}

// The Unix times, in seconds, of the first instants of the years 0 and
// 10000 in UTC: appendUTC writes the times from the first up to, not
// including, the second.
const (
	unixYear0     = -62167219200
	unixYear10000 = 253402300800
)

// appendUTC is appendTime for a time in UTC, written without the general
// layout machinery: 2006-01-02T15:04:05.999999999Z, the fraction without
// its trailing zeros and without its dot when it is zero. The date is
// computed once from the Unix time (t.Date and t.Clock would each compute
// it again).
func appendUTC(dst []byte, t time.Time) ([]byte, bool) {
	secs := t.Unix()
	if secs < unixYear0 || secs >= unixYear10000 {
		return dst, false
	}
	days, sod := (secs-unixYear0)/86400, int((secs-unixYear0)%86400)
	year, month, day := civilDate(days)
	dst = append(dst, '"')
	dst = appendTwoDigits(dst, year/100, 0)
	dst = appendTwoDigits(dst, year%100, 0)
	dst = appendTwoDigits(dst, month, '-')
	dst = appendTwoDigits(dst, day, '-')
	dst = appendTwoDigits(dst, sod/3600, 'T')
	dst = appendTwoDigits(dst, sod/60%60, ':')
	dst = appendTwoDigits(dst, sod%60, ':')
	if ns := t.Nanosecond(); ns != 0 {
		dst = appendFraction(dst, ns)
	}
	return append(dst, 'Z', '"'), true
}

// civilDate returns the proleptic Gregorian date of the day that is days
// days after January 1 of the year 0, 0 <= days < 3652425 (years 0 to
// 9999). It counts years from March 1, so that the leap day is the last
// day of its year, and splits days into 400-year eras (146097 days), years
// of an era (365 days, one more every fourth year except the hundredth
// ones that are not the fourth hundredth), and months of 153 days every
// five (31, 30, 31, 30, 31).
func civilDate(days int64) (year, month, day int) {
	const marchOfYear0 = 31 + 29           // days from January 1 to March 1 of the year 0, a leap year
	z := int(days) - marchOfYear0 + 146097 // one era later, so that z >= 0
	era := z / 146097
	doe := z - era*146097                                  // day of the era, 0..146096
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of the era, 0..399
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the year from March 1, 0..365
	mp := (5*doy + 2) / 153                                // month from March, 0..11
	day = doy - (153*mp+2)/5 + 1
	month = mp + 3
	year = yoe + (era-1)*400
	if month > 12 {
		month -= 12
		year++
	}
	return year, month, day
}

// appendFraction appends '.' and ns, 0 < ns < 1e9, as nine digits
// without their trailing zeros.
func appendFraction(dst []byte, ns int) []byte {
	n := len(dst)
	dst = append(dst, '.', 0, 0, 0, 0, 0, 0, 0, 0, 0)
	for i := len(dst) - 1; i > n; i-- {
		dst[i] = byte('0' + ns%10)
		ns /= 10
	}
	for dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
	}
	return dst
}

// appendTwoDigits appends sep (unless it is 0) and n, 0 <= n < 100, in
// two digits.
func appendTwoDigits(dst []byte, n int, sep byte) []byte {
	if sep != 0 {
		dst = append(dst, sep)
	}
	return append(dst, byte('0'+n/10), byte('0'+n%10))
}
