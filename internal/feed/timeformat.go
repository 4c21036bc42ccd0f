package feed

// TimeFormat is how feedd writes times, in the API and in exports: RFC
// 3339 in UTC with exactly three fractional digits, so timestamps sort as
// strings and never lose the millisecond ids carry.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"
