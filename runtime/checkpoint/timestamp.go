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
// it again), and the digits go into a template appended at once.
func appendUTC(dst []byte, t time.Time) ([]byte, bool) {
	secs := t.Unix()
	if secs < unixYear0 || secs >= unixYear10000 {
		return dst, false
	}
	since := uint64(secs - unixYear0) // unsigned: cheaper to divide
	days, sod := since/86400, uint(since%86400)
	year, month, day := civilDate(uint(days))
	n := len(dst)
	dst = append(dst, `"0000-00-00T00:00:00`...)
	b := dst[n+1 : n+20]
	putTwoDigits(b[0:2], year/100)
	putTwoDigits(b[2:4], year%100)
	putTwoDigits(b[5:7], month)
	putTwoDigits(b[8:10], day)
	putTwoDigits(b[11:13], sod/3600)
	putTwoDigits(b[14:16], sod/60%60)
	putTwoDigits(b[17:19], sod%60)
	if ns := t.Nanosecond(); ns != 0 {
		dst = appendFraction(dst, uint(ns))
	}
	return append(dst, 'Z', '"'), true
}

// twoDigits holds the numbers 00 to 99, two bytes each.
const twoDigits = "" +
	"00010203040506070809" + "10111213141516171819" + "20212223242526272829" + "30313233343536373839" +
	"40414243444546474849" + "50515253545556575859" + "60616263646566676869" + "70717273747576777879" +
	"80818283848586878889" + "90919293949596979899"

// putTwoDigits writes n, n < 100, in two decimal digits into b[0] and
// b[1].
func putTwoDigits(b []byte, n uint) {
	i := n * 2
	b[0], b[1] = twoDigits[i], twoDigits[i+1]
}

// civilDate returns the proleptic Gregorian date of the day that is days
// days after January 1 of the year 0, 0 <= days < 3652425 (years 0 to
// 9999). It counts years from March 1, so that the leap day is the last
// day of its year, and splits days into 400-year eras (146097 days), years
// of an era (365 days, one more every fourth year except the hundredth
// ones that are not the fourth hundredth), and months of 153 days every
// five (31, 30, 31, 30, 31).
func civilDate(days uint) (year, month, day uint) {
	const marchOfYear0 = 31 + 29      // days from January 1 to March 1 of the year 0, a leap year
	z := days - marchOfYear0 + 146097 // one era later, so that z >= 0
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
func appendFraction(dst []byte, ns uint) []byte {
	n := len(dst)
	dst = append(dst, ".000000000"...)
	b := dst[n+1 : n+10]
	b[0] = byte('0' + ns/1e8)
	putTwoDigits(b[1:3], ns/1e6%100)
	putTwoDigits(b[3:5], ns/1e4%100)
	putTwoDigits(b[5:7], ns/100%100)
	putTwoDigits(b[7:9], ns%100)
	end := len(dst)
	for dst[end-1] == '0' {
		end--
	}
	return dst[:end]
}
