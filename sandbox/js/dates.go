package js

import (
	"math"
	"regexp"
	"time"

	"github.com/dop251/goja"
)

// Date layouts, as goja formats them, applied in UTC.
const (
	dateTimeLayout       = "Mon Jan 02 2006 15:04:05 GMT-0700 (MST)"
	dateLayout           = "Mon Jan 02 2006"
	timeLayout           = "15:04:05 GMT-0700 (MST)"
	localeDateTimeLayout = "01/02/2006, 15:04:05"
	localeDateLayout     = "01/02/2006"
	localeTimeLayout     = "15:04:05"
)

var (
	// isoDateOnly matches the date-only ISO forms, which JavaScript
	// already reads as UTC.
	isoDateOnly = regexp.MustCompile(`^\s*[+-]?\d{4,6}(-\d\d(-\d\d)?)?\s*$`)
	// hasZone matches a date string that names its offset or zone.
	hasZone = regexp.MustCompile(`(?i)(z|gmt|utc|\but|[+-]\d\d:?\d\d)\s*(\([^)]*\))?\s*$`)
)

// localMethods maps each local-time Date method to its UTC twin.
var localMethods = [...][2]string{
	{"getFullYear", "getUTCFullYear"}, {"getMonth", "getUTCMonth"}, {"getDate", "getUTCDate"},
	{"getDay", "getUTCDay"}, {"getHours", "getUTCHours"}, {"getMinutes", "getUTCMinutes"},
	{"getSeconds", "getUTCSeconds"}, {"getMilliseconds", "getUTCMilliseconds"},
	{"setFullYear", "setUTCFullYear"}, {"setMonth", "setUTCMonth"}, {"setDate", "setUTCDate"},
	{"setHours", "setUTCHours"}, {"setMinutes", "setUTCMinutes"}, {"setSeconds", "setUTCSeconds"},
	{"setMilliseconds", "setUTCMilliseconds"},
}

// installUTCDates makes Date keep and show time in UTC whatever the
// host's time zone: local-time methods are their UTC twins, the string
// forms are formatted in UTC, dates built from parts or parsed from a
// string without a zone are UTC, and getTimezoneOffset is 0.
func (c *call) installUTCDates() {
	date := c.object("Date")
	proto := c.object("Date", "prototype")
	if date == nil || proto == nil {
		return
	}
	for _, m := range localMethods {
		_ = proto.Set(m[0], proto.Get(m[1]))
	}
	getTime, _ := goja.AssertFunction(proto.Get("getTime"))
	format := func(layout string) func(goja.FunctionCall) goja.Value {
		return func(fc goja.FunctionCall) goja.Value {
			ms := callOrig(getTime, fc.This).ToFloat()
			return c.vm.ToValue(formatMillis(ms, layout))
		}
	}
	for _, f := range [...][2]string{
		{"toString", dateTimeLayout}, {"toDateString", dateLayout}, {"toTimeString", timeLayout},
		{"toLocaleString", localeDateTimeLayout}, {"toLocaleDateString", localeDateLayout},
		{"toLocaleTimeString", localeTimeLayout},
	} {
		_ = proto.Set(f[0], format(f[1]))
	}
	_ = proto.Set("getTimezoneOffset", func(fc goja.FunctionCall) goja.Value {
		if math.IsNaN(callOrig(getTime, fc.This).ToFloat()) {
			return c.vm.ToValue(math.NaN())
		}
		return c.vm.ToValue(0)
	})
	c.utcDateStatics(date)
}

func formatMillis(ms float64, layout string) string {
	if math.IsNaN(ms) {
		return "Invalid Date"
	}
	return time.UnixMilli(int64(ms)).UTC().Format(layout)
}

// utcDateStatics replaces Date.parse and the Date constructor so that a
// string without a zone, and a date built from parts, are read as UTC.
func (c *call) utcDateStatics(date *goja.Object) {
	origParse, _ := goja.AssertFunction(date.Get("parse"))
	utc, _ := goja.AssertFunction(date.Get("UTC"))
	parse := func(v goja.Value) goja.Value {
		s := c.toStr(v)
		ms := callOrig(origParse, goja.Undefined(), s).ToFloat()
		if math.IsNaN(ms) || isoDateOnly.MatchString(s.String()) || hasZone.MatchString(s.String()) {
			return c.vm.ToValue(ms)
		}
		_, offset := time.UnixMilli(int64(ms)).In(time.Local).Zone()
		return c.vm.ToValue(ms + float64(offset)*1000)
	}
	c.wrap(date, "parse", func(_ goja.Callable, fc goja.FunctionCall) goja.Value { return parse(fc.Argument(0)) })
	c.proxyConstructor("Date",
		func(target *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			switch {
			case len(args) >= 2:
				args = []goja.Value{callOrig(utc, goja.Undefined(), args...)}
			case len(args) == 1:
				if _, isObj := args[0].(*goja.Object); !isObj {
					if s, ok := args[0].(goja.String); ok {
						args = []goja.Value{parse(s)}
					}
				}
			}
			return c.construct(target, args, newTarget)
		},
		func(target *goja.Object, _ goja.Value, _ []goja.Value) goja.Value {
			now := c.construct(target, nil, target)
			return c.vm.ToValue(formatMillis(now.ToNumber().ToFloat(), dateTimeLayout))
		})
}
