package snowmint

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Field is one of the three fields below an id's timestamp.
type Field int

const (
	// Datacenter is the datacenter id (Discord's process).
	Datacenter Field = iota
	// Worker is the worker id (Instagram's shard, Sonyflake's machine, TSID's node).
	Worker
	// Sequence is the sequence within a tick (Discord's increment, TSID's counter).
	Sequence
)

// String is the field's key, as JSON and the shared vectors write it: "datacenter".
func (f Field) String() string {
	switch f {
	case Datacenter:
		return "datacenter"
	case Worker:
		return "worker"
	case Sequence:
		return "sequence"
	}
	return "field(" + strconv.Itoa(int(f)) + ")"
}

// Bits are the widths of an id's fields.
type Bits struct {
	Timestamp, Datacenter, Worker, Sequence uint
}

func (b Bits) of(f Field) uint {
	switch f {
	case Datacenter:
		return b.Datacenter
	case Worker:
		return b.Worker
	}
	return b.Sequence
}

func (b Bits) total() uint {
	return b.Timestamp + b.Datacenter + b.Worker + b.Sequence
}

// Layout says how a 64-bit id is cut into fields: a timestamp of ticks since an epoch in
// the top bits, then datacenter, worker and sequence in the layout's Order. Get one with
// LayoutNamed, or take a preset such as Twitter; WithTickMs and WithEpochMs change a copy.
type Layout struct {
	name    string
	bits    Bits
	order   [3]Field
	tickMs  uint64
	epochMs uint64
}

var highToLow = [3]Field{Datacenter, Worker, Sequence}

// LayoutOption replaces a part of the layout LayoutNamed returns: TickMs and EpochMs.
type LayoutOption func(*Layout)

// TickMs is a LayoutNamed option: the layout's ticks are this long, in milliseconds.
func TickMs(tickMs uint64) LayoutOption {
	return func(l *Layout) { l.tickMs = tickMs }
}

// EpochMs is a LayoutNamed option: the layout's epoch is this, in milliseconds since the
// Unix epoch.
func EpochMs(epochMs uint64) LayoutOption {
	return func(l *Layout) { l.epochMs = epochMs }
}

// zeroTick is the core's refusal of a tick of 0 ms.
const zeroTick = "tick length must be at least 1 ms, got 0"

// LayoutNamed returns the preset with this name (case-insensitive), or a custom layout
// written custom:T/D/W/S: the timestamp, datacenter, worker and sequence widths from high to
// low, adding up to 63 or 64, with 1 ms ticks and Twitter's epoch. The options TickMs and
// EpochMs replace the tick and the epoch, as the other clients' named(spec, tick, epoch)
// do.
//
// It fails when no preset has the name, or when the custom widths are malformed, add up to
// neither 63 nor 64, or give the timestamp or the sequence no bit; and when the tick is 0 or
// the layout's last tick would end past 2^64 - 1 ms, checked once all options are applied.
func LayoutNamed(spec string, opts ...LayoutOption) (Layout, error) {
	l, err := layoutNamed(spec)
	if err != nil || len(opts) == 0 {
		return l, err
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&l)
		}
	}
	if l.tickMs == 0 {
		return Layout{}, layoutErrorf(zeroTick)
	}
	return l.checkedLastMs()
}

func layoutNamed(spec string) (Layout, error) {
	const custom = "custom:"
	if len(spec) >= len(custom) && strings.EqualFold(spec[:len(custom)], custom) {
		return customLayout(spec, spec[len(custom):])
	}
	names := make([]string, len(Presets))
	for i, p := range Presets {
		if strings.EqualFold(p.name, spec) {
			return p, nil
		}
		names[i] = p.name
	}
	return Layout{}, layoutErrorf("unknown layout %s: expected one of %s or custom:T/D/W/S",
		strconv.Quote(spec), strings.Join(names, ", "))
}

func customLayout(spec, widths string) (Layout, error) {
	parts := strings.Split(widths, "/")
	if len(parts) != 4 {
		return Layout{}, layoutErrorf("custom layout %s must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12",
			strconv.Quote(spec))
	}
	var w [4]uint
	for i, field := range []string{"timestamp", "datacenter", "worker", "sequence"} {
		// Plain digits only, as the core takes them: no sign, no space.
		n, err := strconv.ParseUint(parts[i], 10, 8)
		if err != nil || n > 64 || len(parts[i]) > 3 {
			return Layout{}, layoutErrorf("custom layout %s width %s is not a number of bits 0..=64",
				field, strconv.Quote(parts[i]))
		}
		w[i] = uint(n)
	}
	b := Bits{w[0], w[1], w[2], w[3]}
	if t := b.total(); t != 63 && t != 64 {
		return Layout{}, layoutErrorf("custom layout widths add up to %d bits: they must add up to 63 (bit 63 stays 0) or 64", t)
	}
	if b.Timestamp == 0 {
		return Layout{}, layoutErrorf("layout needs at least 1 timestamp bit, got 0")
	}
	if b.Sequence == 0 {
		return Layout{}, layoutErrorf("custom layout needs at least 1 sequence bit, got 0")
	}
	return Layout{spec, b, highToLow, 1, TwitterEpochMs}.checkedLastMs()
}

// WithTickMs returns the layout with another tick length, in milliseconds. It fails when
// the tick is 0, or the layout's last tick would end past 2^64 - 1 ms. LayoutNamed with the
// TickMs option does the same for a layout looked up by name.
func (l Layout) WithTickMs(tickMs uint64) (Layout, error) {
	if tickMs == 0 {
		return Layout{}, layoutErrorf(zeroTick)
	}
	l.tickMs = tickMs
	return l.checkedLastMs()
}

// WithEpochMs returns the layout with another epoch, in milliseconds since the Unix
// epoch. It fails when the layout's last tick would then end past 2^64 - 1 ms. LayoutNamed
// with the EpochMs option does the same for a layout looked up by name.
func (l Layout) WithEpochMs(epochMs uint64) (Layout, error) {
	l.epochMs = epochMs
	return l.checkedLastMs()
}

// LayoutError is a layout that is no preset and no valid custom:T/D/W/S, or a tick or an
// epoch it cannot take. Its message is the core's.
type LayoutError struct {
	msg string
}

func (e *LayoutError) Error() string { return e.msg }

func layoutErrorf(format string, args ...any) error {
	return &LayoutError{msg: fmt.Sprintf(format, args...)}
}

// DecodeError is text that is no decimal id, or an id past its layout's largest id. Its
// message is the core's, word for word.
type DecodeError struct {
	// Input is what was refused: the text, or the id in decimal.
	Input string
	msg   string
}

func (e *DecodeError) Error() string { return e.msg }

// checkedLastMs refuses a layout whose last tick ends past 2^64 - 1 ms, as the core does,
// so that decoding never overflows.
func (l Layout) checkedLastMs() (Layout, error) {
	// The span is 2^timestamp ticks; timestamp is at most 63 bits, as sequence has one.
	hi, span := bits.Mul64(uint64(1)<<l.bits.Timestamp, l.tickMs)
	_, carry := bits.Add64(l.epochMs, span, 0)
	if hi != 0 || carry != 0 {
		return Layout{}, layoutErrorf("epoch %d ms puts the layout's last tick past the largest millisecond count", l.epochMs)
	}
	return l, nil
}

// Decode takes an id apart. It fails with a *DecodeError when the id is larger than the
// layout's largest id.
func (l Layout) Decode(id uint64) (Decoded, error) {
	if largest := l.MaxID(); id > largest {
		return Decoded{}, &DecodeError{Input: strconv.FormatUint(id, 10),
			msg: fmt.Sprintf("id %d is out of range for this layout: its largest id is %d", id, largest)}
	}
	var shift [3]uint
	at := uint(0)
	for i := len(l.order) - 1; i >= 0; i-- {
		shift[l.order[i]] = at
		at += l.bits.of(l.order[i])
	}
	timestamp := field(id, at, l.bits.Timestamp)
	return Decoded{
		ID:        id,
		Timestamp: timestamp,
		// checkedLastMs keeps this within 64 bits.
		UnixMs:     l.epochMs + timestamp*l.tickMs,
		Datacenter: field(id, shift[Datacenter], l.bits.Datacenter),
		Worker:     field(id, shift[Worker], l.bits.Worker),
		Sequence:   field(id, shift[Sequence], l.bits.Sequence),
	}, nil
}

// DecodeString takes an id written in decimal apart.
func (l Layout) DecodeString(id string) (Decoded, error) {
	n, err := ParseID(id)
	if err != nil {
		return Decoded{}, err
	}
	return l.Decode(n)
}

func field(id uint64, shift, width uint) uint64 {
	if width == 0 {
		return 0
	}
	return id >> shift & (math.MaxUint64 >> (64 - width))
}

// maxDigits is the number of digits of 2^64 - 1.
const maxDigits = 20

// ParseID reads a decimal id, 0 to 2^64 - 1. It fails with a *DecodeError on empty text, a
// character that is no digit (a sign or a space included), and numbers past 2^64 - 1.
func ParseID(text string) (uint64, error) {
	why := ""
	switch {
	case text == "":
		why = "empty input: expected an id"
	default:
		position := 0 // in characters, as the core counts
		for _, c := range text {
			if c < '0' || c > '9' {
				why = fmt.Sprintf("invalid character %s at position %d in decimal id", quoteRune(c), position)
				break
			}
			position++
		}
	}
	if why == "" && len(text) > maxDigits {
		why = fmt.Sprintf("decimal id has %d characters, more than the %d a 64-bit id takes", len(text), maxDigits)
	}
	if why == "" {
		n, err := strconv.ParseUint(text, 10, 64)
		if err == nil {
			return n, nil
		}
		why = "decimal id does not fit in 64 bits"
	}
	return 0, &DecodeError{Input: text, msg: why}
}

// quoteRune quotes a character as the core does, escaping a newline, tab, quote mark or
// backslash with a backslash.
func quoteRune(c rune) string {
	switch c {
	case '\n':
		return `'\n'`
	case '\r':
		return `'\r'`
	case '\t':
		return `'\t'`
	case 0:
		return `'\0'`
	case '\\':
		return `'\\'`
	case '\'':
		return `'\''`
	}
	return "'" + string(c) + "'"
}

// Name is the layout as written: a preset's name or custom:T/D/W/S.
func (l Layout) Name() string { return l.name }

// Bits are the layout's field widths.
func (l Layout) Bits() Bits { return l.bits }

// Order is the fields below the timestamp, most significant first.
func (l Layout) Order() [3]Field { return l.order }

// TickMs is the length of a tick in milliseconds.
func (l Layout) TickMs() uint64 { return l.tickMs }

// EpochMs is the epoch, in milliseconds since the Unix epoch.
func (l Layout) EpochMs() uint64 { return l.epochMs }

// MaxID is the layout's largest id: 2^63 - 1 or 2^64 - 1.
func (l Layout) MaxID() uint64 {
	return math.MaxUint64 >> (64 - l.bits.total())
}

// String describes the layout: "twitter (41/5/5/12, tick 1 ms, epoch 1288834974657 ms)".
func (l Layout) String() string {
	b := l.bits
	return fmt.Sprintf("%s (%d/%d/%d/%d, tick %d ms, epoch %d ms)", l.name, b.Timestamp, b.Datacenter, b.Worker, b.Sequence, l.tickMs, l.epochMs)
}

// textEncoding is how id text is written, as the core reads it: the digits in order of
// value, whether letters are read in either case, the prefixes skipped before the digits,
// the most digits a 64-bit id takes, and letters read as digits (Crockford's). The table
// of them, textEncodings, is generated from the vectors (presets.go).
type textEncoding struct {
	alphabet string
	foldCase bool
	prefixes []string
	maxLen   int
	aliases  map[byte]uint64
}

// encodingNamed is the encoding a name stands for, in any case, as the core reads names.
func encodingNamed(name string) (string, error) {
	found, ok := encodingNames[strings.ToLower(name)]
	if !ok {
		return "", &DecodeError{Input: name, msg: fmt.Sprintf("unknown encoding %q: expected one of %s", name, strings.Join(Encodings, ", "))}
	}
	return found, nil
}

// ParseIDAs reads id text in the encoding named: decimal, hex, base32, base62 or binary
// (or dec, b32, b62, bin), in any case, as the core reads and writes them. It never
// guesses. It fails with a *DecodeError naming, as the core does, the first character
// outside the encoding, else too many digits, else a value past 2^64 - 1.
func ParseIDAs(text, encoding string) (uint64, error) {
	name, err := encodingNamed(encoding)
	if err != nil {
		return 0, err
	}
	e := textEncodings[name]
	digits, offset := text, 0
	for _, prefix := range e.prefixes {
		if strings.HasPrefix(text, prefix) {
			digits, offset = text[len(prefix):], len(prefix)
			break
		}
	}
	if digits == "" {
		return 0, &DecodeError{Input: text, msg: "empty input: expected an id"}
	}
	radix := uint64(len(e.alphabet))
	var value uint64
	overflow := false
	count := 0 // in characters, as the core counts
	for _, c := range digits {
		digit := -1
		if c < 128 {
			b := byte(c)
			if e.foldCase {
				digit = strings.IndexByte(strings.ToUpper(e.alphabet), toUpper(b))
			} else {
				digit = strings.IndexByte(e.alphabet, b)
			}
			if alias, ok := e.aliases[toUpper(b)]; ok {
				digit = int(alias)
			}
		}
		if digit < 0 {
			return 0, &DecodeError{Input: text, msg: fmt.Sprintf("invalid character %s at position %d in %s id", quoteRune(c), offset+count, name)}
		}
		hi, lo := bits.Mul64(value, radix)
		sum, carry := bits.Add64(lo, uint64(digit), 0)
		overflow = overflow || hi != 0 || carry != 0
		value = sum
		count++
	}
	if count > e.maxLen {
		return 0, &DecodeError{Input: text, msg: fmt.Sprintf("%s id has %d characters, more than the %d a 64-bit id takes", name, count, e.maxLen)}
	}
	if overflow {
		return 0, &DecodeError{Input: text, msg: name + " id does not fit in 64 bits"}
	}
	return value, nil
}

func toUpper(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}

// ReadID reads id text in the encoding named, as ParseIDAs does; and a negative decimal as
// an id as a signed 64-bit column (SQL bigint, a Java long) holds it: for a layout of 64
// bits, the two's complement. A layout of 63 bits has no negative ids, so it refuses one.
func (l Layout) ReadID(text, encoding string) (uint64, error) {
	name, err := encodingNamed(encoding)
	if err != nil {
		return 0, err
	}
	if name != "decimal" || !strings.HasPrefix(text, "-") || text == "-" {
		return ParseIDAs(text, name)
	}
	magnitude, err := ParseID(text[1:])
	var decodeErr *DecodeError
	switch {
	case err == nil:
	case errors.As(err, &decodeErr) && decodeErr.msg == "decimal id does not fit in 64 bits":
		magnitude = math.MaxUint64
	case errors.As(err, &decodeErr) && strings.HasPrefix(decodeErr.msg, "invalid character "):
		// Positions count the sign.
		head, rest, _ := strings.Cut(decodeErr.msg, " at position ")
		position, tail, _ := strings.Cut(rest, " ")
		n, _ := strconv.Atoi(position)
		return 0, &DecodeError{Input: text, msg: fmt.Sprintf("%s at position %d %s", head, n+1, tail)}
	default:
		return 0, err
	}
	if magnitude > 1<<63 {
		return 0, &DecodeError{Input: text, msg: fmt.Sprintf("id %q is below -9223372036854775808, the smallest signed 64-bit number", text)}
	}
	if magnitude != 0 && l.bits.total() < 64 {
		layoutName := l.name
		if strings.HasPrefix(layoutName, "custom") {
			layoutName = "custom"
		}
		return 0, &DecodeError{Input: text, msg: fmt.Sprintf("id %q is negative, but layout %s uses 63 bits: none of its ids is negative, even in a signed 64-bit column", text, layoutName)}
	}
	return -magnitude, nil
}
