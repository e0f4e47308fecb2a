package snowmint

import (
	"fmt"
	"time"
)

// Decoded is an id taken apart by a Layout.
type Decoded struct {
	// ID is the id.
	ID uint64
	// Timestamp is the ticks since the layout's epoch.
	Timestamp uint64
	// UnixMs is the start of that tick, in milliseconds since the Unix epoch.
	UnixMs uint64
	// Datacenter is the datacenter id (0 when the layout has none).
	Datacenter uint64
	// Worker is the worker id.
	Worker uint64
	// Sequence is the sequence within the tick.
	Sequence uint64
}

// Time is the start of the id's tick, in UTC.
func (d Decoded) Time() time.Time {
	return time.Unix(int64(d.UnixMs/1000), int64(d.UnixMs%1000)*int64(time.Millisecond)).UTC()
}

// String lists the fields: "id 175928847299117063 time 2016-04-30T11:18:25.796Z unix_ms
// 1462015105796 timestamp 41944705796 datacenter 0 worker 1 sequence 7" (a Discord id).
func (d Decoded) String() string {
	return fmt.Sprintf("id %d time %s unix_ms %d timestamp %d datacenter %d worker %d sequence %d",
		d.ID, d.Time().Format("2006-01-02T15:04:05.000Z"), d.UnixMs, d.Timestamp, d.Datacenter, d.Worker, d.Sequence)
}

// Decode takes an id apart by a preset's name (such as "twitter") or a custom:T/D/W/S
// layout; for another tick or epoch, use LayoutNamed and the Layout's methods. It fails
// when the layout is unknown or malformed, or the id is larger than its largest id.
func Decode(id uint64, layout string) (Decoded, error) {
	l, err := LayoutNamed(layout)
	if err != nil {
		return Decoded{}, err
	}
	return l.Decode(id)
}

// DecodeString is Decode for an id written in decimal.
func DecodeString(id, layout string) (Decoded, error) {
	n, err := ParseID(id)
	if err != nil {
		return Decoded{}, err
	}
	return Decode(n, layout)
}
