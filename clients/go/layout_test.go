package snowmint

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

type vectorFile struct {
	Layouts []struct {
		Layout  string          `json:"layout"`
		Bits    map[string]uint `json:"bits"`
		Order   []string        `json:"order"`
		TickMs  string          `json:"tick_ms"`
		EpochMs string          `json:"epoch_ms"`
		MaxID   string          `json:"max_id"`
	} `json:"layouts"`
	Vectors []map[string]string `json:"vectors"`
}

// vectors reads testdata/vectors.json: from SNOWMINT_VECTORS, or from the repository.
func vectors(t *testing.T) vectorFile {
	t.Helper()
	path := os.Getenv("SNOWMINT_VECTORS")
	if path == "" {
		path = "../../testdata/vectors.json"
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the shared vectors: %v (SNOWMINT_VECTORS names the file)", err)
	}
	var f vectorFile
	if err := json.Unmarshal(text, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

func u64(t *testing.T, text string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEveryVectorDecodesToItsFields(t *testing.T) {
	f := vectors(t)
	layouts := map[string]Layout{}
	for _, l := range f.Layouts {
		layout, err := LayoutNamed(l.Layout)
		if err == nil {
			layout, err = layout.WithTickMs(u64(t, l.TickMs))
		}
		if err == nil {
			layout, err = layout.WithEpochMs(u64(t, l.EpochMs))
		}
		if err != nil {
			t.Fatalf("%s: %v", l.Layout, err)
		}
		layouts[l.Layout] = layout
	}
	for _, v := range f.Vectors {
		layout, ok := layouts[v["layout"]]
		if !ok {
			t.Fatalf("a vector of an unlisted layout: %v", v)
		}
		d, err := layout.DecodeString(v["id"])
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		got := map[string]string{
			"layout":     v["layout"],
			"id":         strconv.FormatUint(d.ID, 10),
			"timestamp":  strconv.FormatUint(d.Timestamp, 10),
			"unix_ms":    strconv.FormatUint(d.UnixMs, 10),
			"datacenter": strconv.FormatUint(d.Datacenter, 10),
			"worker":     strconv.FormatUint(d.Worker, 10),
			"sequence":   strconv.FormatUint(d.Sequence, 10),
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("decoded %v\n   want %v", got, v)
		}
	}
	if len(f.Vectors) < 100 {
		t.Errorf("the file holds %d vectors", len(f.Vectors))
	}
}

func TestThePresetsAreTheVectorsLayouts(t *testing.T) {
	listed := map[string]bool{}
	for _, want := range vectors(t).Layouts {
		listed[want.Layout] = true
		// A custom layout is checked by its name alone: its widths are in the name.
		l, err := LayoutNamed(want.Layout)
		if err != nil {
			t.Fatal(err)
		}
		b := l.Bits()
		got := map[string]uint{"timestamp": b.Timestamp, "datacenter": b.Datacenter, "worker": b.Worker, "sequence": b.Sequence}
		if fmt.Sprint(got) != fmt.Sprint(want.Bits) {
			t.Errorf("%s: bits %v, want %v", want.Layout, got, want.Bits)
		}
		order := []string{}
		for _, f := range l.Order() {
			order = append(order, f.String())
		}
		if fmt.Sprint(order) != fmt.Sprint(want.Order) {
			t.Errorf("%s: order %v, want %v", want.Layout, order, want.Order)
		}
		if got := strconv.FormatUint(l.MaxID(), 10); got != want.MaxID {
			t.Errorf("%s: max id %s, want %s", want.Layout, got, want.MaxID)
		}
		if want.Layout[:min(7, len(want.Layout))] != "custom:" {
			if got := strconv.FormatUint(l.TickMs(), 10); got != want.TickMs {
				t.Errorf("%s: tick %s ms, want %s", want.Layout, got, want.TickMs)
			}
			if got := strconv.FormatUint(l.EpochMs(), 10); got != want.EpochMs {
				t.Errorf("%s: epoch %s ms, want %s", want.Layout, got, want.EpochMs)
			}
		}
	}
	for _, p := range Presets {
		if !listed[p.Name()] {
			t.Errorf("the vectors have no layout %s", p.Name())
		}
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func TestIDsPast2To63DecodeUnsigned(t *testing.T) {
	d, err := DecodeString("18446744073709551615", "discord")
	if err != nil {
		t.Fatal(err)
	}
	want := Decoded{ID: 1<<64 - 1, Timestamp: 1<<42 - 1, UnixMs: 1420070400000 + 1<<42 - 1, Datacenter: 31, Worker: 31, Sequence: 4095}
	if d != want {
		t.Errorf("got %+v, want %+v", d, want)
	}
	if got, want := d.Time(), time.UnixMilli(int64(want.UnixMs)).UTC(); !got.Equal(want) {
		t.Errorf("time %v, want %v", got, want)
	}
}

func TestLayoutNamesAreCaseInsensitive(t *testing.T) {
	if l, err := LayoutNamed("Discord"); err != nil || l != Discord {
		t.Errorf("Discord: %v, %v", l, err)
	}
	if l, err := LayoutNamed("CUSTOM:39/0/10/14"); err != nil || l.Bits().Timestamp != 39 {
		t.Errorf("CUSTOM: %v, %v", l, err)
	}
	if l, err := LayoutNamed("custom: 41/+5/5 /12"); err != nil || l.Bits() != (Bits{41, 5, 5, 12}) {
		t.Errorf("widths with spaces and a plus sign, as the core reads them: %v, %v", l, err)
	}
}

func TestTickAndEpochReplaceTheLayoutsOwn(t *testing.T) {
	l, err := Twitter.WithTickMs(10)
	if err == nil {
		l, err = l.WithEpochMs(0)
	}
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Decode(1 << 22)
	if err != nil || d.Timestamp != 1 || d.UnixMs != 10 {
		t.Errorf("got %+v, %v", d, err)
	}
	c, err := LayoutNamed("custom:41/5/5/12")
	if err != nil || c.TickMs() != 1 || c.EpochMs() != TwitterEpochMs {
		t.Errorf("a custom layout's tick and epoch: %v, %v", c, err)
	}
}

func TestExampleOfTheCLIsHelpDecodes(t *testing.T) {
	// `snowmint parse --help` shows this (Discord) id with these fields.
	d, err := Decode(175928847299117063, "discord")
	if err != nil {
		t.Fatal(err)
	}
	want := "id 175928847299117063 time 2016-04-30T11:18:25.796Z unix_ms 1462015105796 timestamp 41944705796 datacenter 0 worker 1 sequence 7"
	if d.String() != want {
		t.Errorf("got  %s\nwant %s", d, want)
	}
}

func errorIs(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("no error, want %q", want)
	} else if err.Error() != want {
		t.Errorf("error %q\n      want %q", err, want)
	}
}

func TestBadIDTextIsRefused(t *testing.T) {
	for text, want := range map[string]string{
		"12a":                   `cannot parse "12a": invalid character 'a' at position 2 in decimal id`,
		"-1":                    `cannot parse "-1": invalid character '-' at position 0 in decimal id`,
		"é1":                    `cannot parse "é1": invalid character 'é' at position 0 in decimal id`,
		"1é":                    `cannot parse "1é": invalid character 'é' at position 1 in decimal id`,
		"1\t":                   `cannot parse "1\t": invalid character '\t' at position 1 in decimal id`,
		"1'":                    `cannot parse "1'": invalid character '\'' at position 1 in decimal id`,
		"1\\":                   `cannot parse "1\\": invalid character '\\' at position 1 in decimal id`,
		"1😀2":                   `cannot parse "1😀2": invalid character '😀' at position 1 in decimal id`,
		"":                      `cannot parse "": empty input: expected an id`,
		"18446744073709551616":  `cannot parse "18446744073709551616": decimal id does not fit in 64 bits`,
		"184467440737095516150": `cannot parse "184467440737095516150": decimal id has 21 characters, more than the 20 a 64-bit id takes`,
	} {
		_, err := DecodeString(text, "discord")
		errorIs(t, err, want)
	}
}

func TestAnIDPastTheLayoutIsRefused(t *testing.T) {
	_, err := DecodeString("9223372036854775808", "twitter")
	errorIs(t, err, "id 9223372036854775808 is out of range for layout twitter: its largest id is 9223372036854775807")
	_, err = Decode(1<<64-1, "custom:39/0/10/14")
	errorIs(t, err, "id 18446744073709551615 is out of range for layout custom:39/0/10/14: its largest id is 9223372036854775807")
}

func TestBadLayoutsAreRefused(t *testing.T) {
	for spec, want := range map[string]string{
		"flickr":            `unknown layout "flickr": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S`,
		"custom:41/5/5":     `custom layout "custom:41/5/5" must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12`,
		"custom:x/5/5/12":   `custom layout timestamp width "x" is not a number of bits 0..=64`,
		"custom:41/65/5/12": `custom layout datacenter width "65" is not a number of bits 0..=64`,
		"custom:41/5/5/11":  "custom layout widths add up to 62 bits: they must add up to 63 (bit 63 stays 0) or 64",
		"custom:0/5/5/53":   "layout needs at least 1 timestamp bit, got 0",
		"custom:52/0/11/0":  "custom layout needs at least 1 sequence bit, got 0",
	} {
		_, err := Decode(1, spec)
		errorIs(t, err, want)
	}
	_, err := Twitter.WithTickMs(0)
	errorIs(t, err, "tick length must be at least 1 ms, got 0")
	wide, err := LayoutNamed("custom:63/0/0/1")
	if err != nil {
		t.Fatal(err)
	}
	// 2^63 ticks of 2 ms end past 2^64 ms.
	_, err = wide.WithTickMs(2)
	errorIs(t, err, "epoch 1288834974657 ms puts the layout's last tick past the largest millisecond count")
	// As the core has it, the end of the last tick must be a millisecond count itself.
	if _, err := wide.WithEpochMs(1<<63 - 1); err != nil {
		t.Errorf("2^63 ticks of 1 ms from 2^63 - 1 ms end at 2^64 - 1 ms: %v", err)
	}
	_, err = wide.WithEpochMs(1 << 63)
	errorIs(t, err, "epoch 9223372036854775808 ms puts the layout's last tick past the largest millisecond count")
}
