package snowmint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	Vectors    []map[string]string `json:"vectors"`
	Documented []map[string]string `json:"documented"`
	Texts      []map[string]any    `json:"texts"`
	Errors     []map[string]string `json:"errors"`
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
		layout, err := LayoutNamed(l.Layout, TickMs(u64(t, l.TickMs)), EpochMs(u64(t, l.EpochMs)))
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

func TestLayoutNamedTakesTheTickAndTheEpochAsOptions(t *testing.T) {
	l, err := LayoutNamed("Twitter", TickMs(10), EpochMs(0))
	if err != nil || l.TickMs() != 10 || l.EpochMs() != 0 || l.Bits() != Twitter.Bits() {
		t.Errorf("twitter with a tick of 10 ms from 0: %v, %v", l, err)
	}
	byMethods, err := Twitter.WithTickMs(10)
	if err == nil {
		byMethods, err = byMethods.WithEpochMs(0)
	}
	if err != nil || l != byMethods {
		t.Errorf("the options give %v, WithTickMs and WithEpochMs %v, %v", l, byMethods, err)
	}
	// Either alone leaves the other as the layout has it; a later option wins.
	if l, err := LayoutNamed("sonyflake", EpochMs(0)); err != nil || l.TickMs() != 10 || l.EpochMs() != 0 {
		t.Errorf("sonyflake from 0: %v, %v", l, err)
	}
	if l, err := LayoutNamed("custom:41/5/5/12", TickMs(2), TickMs(3)); err != nil || l.TickMs() != 3 || l.EpochMs() != TwitterEpochMs {
		t.Errorf("a custom layout with a tick of 3 ms: %v, %v", l, err)
	}
	if l, err := LayoutNamed("discord", nil); err != nil || l != Discord {
		t.Errorf("a nil option changes nothing: %v, %v", l, err)
	}
}

func TestTheTickAndEpochOptionsAreCheckedTogether(t *testing.T) {
	_, err := LayoutNamed("twitter", TickMs(0))
	errorIs(t, err, "tick length must be at least 1 ms, got 0")
	var layoutErr *LayoutError
	if !errors.As(err, &layoutErr) {
		t.Errorf("a tick of 0: an error of type %T", err)
	}
	// 2^40 ticks of 2^24 - 1 ms end at 2^64 - 2^40 ms: past 2^64 - 1 ms from Twitter's epoch
	// (more than 2^40 ms), within it from 0. WithTickMs sees Twitter's epoch; the options are
	// checked once both are in.
	const tick = 1<<24 - 1
	_, err = LayoutNamed("custom:40/0/0/23", TickMs(tick))
	errorIs(t, err, "epoch 1288834974657 ms puts the layout's last tick past the largest millisecond count")
	l, err := LayoutNamed("custom:40/0/0/23", TickMs(tick), EpochMs(0))
	if err != nil || l.TickMs() != tick || l.EpochMs() != 0 {
		t.Errorf("a tick of 2^24 - 1 ms from 0: %v, %v", l, err)
	}
	_, err = LayoutNamed("custom:40/0/0/23", TickMs(tick), EpochMs(1<<40))
	errorIs(t, err, "epoch 1099511627776 ms puts the layout's last tick past the largest millisecond count")
	// A bad name is refused before any option is looked at.
	_, err = LayoutNamed("nope", TickMs(0))
	if !errors.As(err, &layoutErr) || !strings.HasPrefix(err.Error(), `unknown layout "nope"`) {
		t.Errorf("a bad name with a tick of 0: %v", err)
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

func TestTicksAndEpochsPastTheLastMillisecondAreRefused(t *testing.T) {
	// Bad names and widths are in the shared vectors: TestEveryBadInputIsRefusedInTheCoresWords.
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

// withTickAndEpoch is the layout of a vector or an error case: its tick_ms and epoch_ms,
// when it has them, replace the layout's own, as LayoutNamed's options.
func withTickAndEpoch(t *testing.T, v map[string]string) (Layout, error) {
	var opts []LayoutOption
	if tick, ok := v["tick_ms"]; ok {
		opts = append(opts, TickMs(u64(t, tick)))
	}
	if epoch, ok := v["epoch_ms"]; ok {
		opts = append(opts, EpochMs(u64(t, epoch)))
	}
	return LayoutNamed(v["layout"], opts...)
}

// withTickAndEpochMethods is withTickAndEpoch by the Layout's WithTickMs and WithEpochMs,
// in that order.
func withTickAndEpochMethods(t *testing.T, v map[string]string) (Layout, error) {
	l, err := LayoutNamed(v["layout"])
	if tick, ok := v["tick_ms"]; ok && err == nil {
		l, err = l.WithTickMs(u64(t, tick))
	}
	if epoch, ok := v["epoch_ms"]; ok && err == nil {
		l, err = l.WithEpochMs(u64(t, epoch))
	}
	return l, err
}

func TestEveryDocumentedIDDecodesAsItsSourceSays(t *testing.T) {
	f := vectors(t)
	if len(f.Documented) == 0 {
		t.Fatal("the file holds no documented ids")
	}
	for _, v := range f.Documented {
		l, err := withTickAndEpoch(t, v)
		if err != nil {
			t.Fatalf("%s: %v", v["source"], err)
		}
		d, err := l.DecodeString(v["id"])
		if err != nil {
			t.Fatalf("%s: %v", v["source"], err)
		}
		got := fmt.Sprintln(d.Time().Format("2006-01-02T15:04:05.000Z"), d.Timestamp, d.UnixMs, d.Datacenter, d.Worker, d.Sequence)
		want := fmt.Sprintln(v["time"], v["timestamp"], v["unix_ms"], v["datacenter"], v["worker"], v["sequence"])
		if got != want {
			t.Errorf("%s:\n got  %s want %s", v["source"], got, want)
		}
	}
}

func TestEveryTextReadsAsTheCoreReadsIt(t *testing.T) {
	f := vectors(t)
	if len(f.Texts) == 0 {
		t.Fatal("the file holds no texts")
	}
	for _, text := range f.Texts {
		spec := text["layout"].(string)
		encoding, ok := text["encoding"].(string)
		if !ok {
			encoding = "decimal"
		}
		l := layoutOf(t, f, spec)
		got, err := l.ReadID(text["text"].(string), encoding)
		if err != nil || strconv.FormatUint(got, 10) != text["id"].(string) {
			t.Errorf("%v: read %d, %v", text, got, err)
		}
	}
}

func TestEveryBadInputIsRefusedInTheCoresWords(t *testing.T) {
	f := vectors(t)
	if len(f.Errors) == 0 {
		t.Fatal("the file holds no error cases")
	}
	for _, e := range f.Errors {
		var err error
		switch e["what"] {
		case "parse":
			_, err = ParseID(e["id"])
		case "decode":
			_, err = DecodeString(e["id"], e["layout"])
		case "read":
			encoding := e["encoding"]
			if encoding == "" {
				encoding = "decimal"
			}
			var l Layout
			l, err = withTickAndEpoch(t, map[string]string{"layout": e["layout"]})
			if err == nil {
				_, err = l.ReadID(e["id"], encoding)
			}
		case "layout":
			_, err = withTickAndEpoch(t, e)
			_, byMethods := withTickAndEpochMethods(t, e)
			errorIs(t, byMethods, e["message"])
		default:
			t.Fatalf("a case of an unknown kind: %v", e)
		}
		errorIs(t, err, e["message"])
		var decodeErr *DecodeError
		var layoutErr *LayoutError
		if e["what"] == "layout" && !errors.As(err, &layoutErr) || e["what"] != "layout" && !errors.As(err, &decodeErr) {
			t.Errorf("%v: an error of type %T", e, err)
		}
	}
}

// layoutOf is the layout a case of the file names, with a custom layout's tick and epoch
// from the file's layouts.
func layoutOf(t *testing.T, f vectorFile, spec string) Layout {
	t.Helper()
	v := map[string]string{"layout": spec}
	for _, l := range f.Layouts {
		if l.Layout == spec && strings.HasPrefix(spec, "custom:") {
			v["tick_ms"], v["epoch_ms"] = l.TickMs, l.EpochMs
		}
	}
	l, err := withTickAndEpoch(t, v)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	return l
}
