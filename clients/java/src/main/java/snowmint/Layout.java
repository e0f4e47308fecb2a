package snowmint;

import java.math.BigInteger;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * How a 64-bit id is cut into fields: a timestamp of ticks since an epoch in the top bits,
 * then datacenter, worker and sequence in the layout's {@link #order() order}.
 *
 * <p>A layout is a preset ({@link #TWITTER} and the others, or {@link #named(String)} with a
 * preset's name) or a custom one written {@code custom:T/D/W/S}: the timestamp, datacenter,
 * worker and sequence widths from high to low, adding up to 63 or 64, with 1 ms ticks and
 * Twitter's epoch unless {@link #withTickMs(long)} and {@link #withEpochMs(long)} say
 * otherwise.
 *
 * <pre>{@code
 * Decoded d = Layout.named("twitter").decode(1541815603606036480L);
 * d.worker(); // 0..31
 * }</pre>
 *
 * <p>Ids, the maximum id and {@code unixMs} are unsigned 64-bit values held in a {@code long}:
 * layouts that use all 64 bits (Discord, Instagram, TSID, Mastodon) have ids past
 * {@link Long#MAX_VALUE}; print them with {@link Long#toUnsignedString(long)}.
 */
public final class Layout {
    /** The fields below the timestamp, by their keys in JSON. */
    public enum Field {
        /** The datacenter id (Discord's process). */
        DATACENTER,
        /** The worker id (Instagram's shard, Sonyflake's machine, TSID's node). */
        WORKER,
        /** The sequence within a tick (Discord's increment, TSID's counter). */
        SEQUENCE;

        /** The field's key, as JSON and the vectors write it: "datacenter". */
        public String key() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Twitter's epoch, 2010-11-04T01:42:54.657Z: a custom layout's epoch unless given. */
    public static final long TWITTER_EPOCH_MS = 1_288_834_974_657L;

    private static final List<Field> HIGH_TO_LOW =
            List.of(Field.DATACENTER, Field.WORKER, Field.SEQUENCE);

    /** Twitter: 41 bits of 1 ms, 5 datacenter, 5 worker, 12 sequence; bit 63 stays 0. */
    public static final Layout TWITTER = new Layout("twitter", 41, 5, 5, 12, HIGH_TO_LOW, 1, TWITTER_EPOCH_MS);
    /** Discord: 42 bits of 1 ms since 2015-01-01, 5 worker, 5 process, 12 increment. */
    public static final Layout DISCORD = new Layout("discord", 42, 5, 5, 12,
            List.of(Field.WORKER, Field.DATACENTER, Field.SEQUENCE), 1, 1_420_070_400_000L);
    /** Instagram: 41 bits of 1 ms, 13 shard, 10 sequence. */
    public static final Layout INSTAGRAM = new Layout("instagram", 41, 0, 13, 10, HIGH_TO_LOW, 1, 1_314_220_021_721L);
    /** Sonyflake: 39 bits of 10 ms since 2014-09-01, 8 sequence, then 16 machine. */
    public static final Layout SONYFLAKE = new Layout("sonyflake", 39, 0, 16, 8,
            List.of(Field.SEQUENCE, Field.DATACENTER, Field.WORKER), 10, 1_409_529_600_000L);
    /** Baidu uid-generator: 28 bits of 1 s since 2016-05-20, 22 worker, 13 sequence. */
    public static final Layout BAIDU = new Layout("baidu", 28, 0, 22, 13, HIGH_TO_LOW, 1000, 1_463_702_400_000L);
    /** TSID: 42 bits of 1 ms since 2020-01-01, 10 node, 12 counter. */
    public static final Layout TSID = new Layout("tsid", 42, 0, 10, 12, HIGH_TO_LOW, 1, 1_577_836_800_000L);
    /** Mastodon: 48 bits of 1 ms since the Unix epoch, 16 sequence. */
    public static final Layout MASTODON = new Layout("mastodon", 48, 0, 0, 16, HIGH_TO_LOW, 1, 0);

    /** Every preset, in the order the server and the vectors list them. */
    public static final List<Layout> PRESETS =
            List.of(TWITTER, DISCORD, INSTAGRAM, SONYFLAKE, BAIDU, TSID, MASTODON);

    private static final String CUSTOM = "custom:";
    private static final BigInteger U64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    private final String name;
    private final int timestampBits;
    private final int datacenterBits;
    private final int workerBits;
    private final int sequenceBits;
    private final List<Field> order;
    private final long tickMs;
    private final long epochMs;
    private final int timestampShift;
    private final int datacenterShift;
    private final int workerShift;
    private final int sequenceShift;

    private Layout(String name, int timestampBits, int datacenterBits, int workerBits,
            int sequenceBits, List<Field> order, long tickMs, long epochMs) {
        this.name = name;
        this.timestampBits = timestampBits;
        this.datacenterBits = datacenterBits;
        this.workerBits = workerBits;
        this.sequenceBits = sequenceBits;
        this.order = order;
        this.tickMs = tickMs;
        this.epochMs = epochMs;
        // The fields sit below the timestamp in `order`, high to low: the last one at bit 0.
        int shift = 0;
        int[] shifts = new int[Field.values().length];
        for (int i = order.size() - 1; i >= 0; i--) {
            Field f = order.get(i);
            shifts[f.ordinal()] = shift;
            shift += bits(f);
        }
        this.datacenterShift = shifts[Field.DATACENTER.ordinal()];
        this.workerShift = shifts[Field.WORKER.ordinal()];
        this.sequenceShift = shifts[Field.SEQUENCE.ordinal()];
        this.timestampShift = shift;
    }

    /**
     * The preset with this name (case-insensitive), or a custom layout written
     * {@code custom:T/D/W/S}.
     *
     * @throws IllegalArgumentException no preset has the name, or the custom widths are
     *     malformed, add up to neither 63 nor 64, or give the timestamp or the sequence no bit
     */
    public static Layout named(String spec) {
        Objects.requireNonNull(spec, "layout");
        if (spec.regionMatches(true, 0, CUSTOM, 0, CUSTOM.length())) {
            return custom(spec, spec.substring(CUSTOM.length()));
        }
        for (Layout preset : PRESETS) {
            if (preset.name.equalsIgnoreCase(spec)) {
                return preset;
            }
        }
        String names = PRESETS.stream().map(Layout::name).collect(Collectors.joining(", "));
        throw new IllegalArgumentException(
                "unknown layout " + quote(spec) + ": expected one of " + names + " or custom:T/D/W/S");
    }

    private static Layout custom(String spec, String widths) {
        String[] parts = widths.split("/", -1);
        if (parts.length != 4) {
            throw new IllegalArgumentException("custom layout " + quote(spec)
                    + " must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12");
        }
        int t = width("timestamp", parts[0]);
        int d = width("datacenter", parts[1]);
        int w = width("worker", parts[2]);
        int s = width("sequence", parts[3]);
        int total = t + d + w + s;
        if (total != 63 && total != 64) {
            throw new IllegalArgumentException("custom layout widths add up to " + total
                    + " bits: they must add up to 63 (bit 63 stays 0) or 64");
        }
        if (t == 0) {
            throw new IllegalArgumentException("layout needs at least 1 timestamp bit, got 0");
        }
        if (s == 0) {
            throw new IllegalArgumentException("custom layout needs at least 1 sequence bit, got 0");
        }
        return new Layout(spec, t, d, w, s, HIGH_TO_LOW, 1, TWITTER_EPOCH_MS).checkedLastMs();
    }

    private static int width(String field, String text) {
        int bits;
        try {
            bits = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            bits = -1;
        }
        if (bits < 0 || bits > 64) {
            throw new IllegalArgumentException(
                    "custom layout " + field + " width " + quote(text) + " is not a number of bits 0..=64");
        }
        return bits;
    }

    /**
     * The same layout with another tick length.
     *
     * @throws IllegalArgumentException the tick is under 1 ms, or the layout's last tick
     *     would lie past the largest (unsigned 64-bit) millisecond count
     */
    public Layout withTickMs(long tickMs) {
        if (tickMs < 1) {
            throw new IllegalArgumentException("tick length must be at least 1 ms, got " + tickMs);
        }
        return new Layout(name, timestampBits, datacenterBits, workerBits, sequenceBits, order,
                tickMs, epochMs).checkedLastMs();
    }

    /**
     * The same layout with another epoch, in milliseconds since the Unix epoch.
     *
     * @throws IllegalArgumentException the epoch is negative, or puts the layout's last tick
     *     past the largest (unsigned 64-bit) millisecond count
     */
    public Layout withEpochMs(long epochMs) {
        if (epochMs < 0) {
            throw new IllegalArgumentException(
                    "epoch " + epochMs + " ms is out of range 0..=" + Long.MAX_VALUE);
        }
        return new Layout(name, timestampBits, datacenterBits, workerBits, sequenceBits, order,
                tickMs, epochMs).checkedLastMs();
    }

    /**
     * Refuses a layout whose last tick ends past 2^64 - 1 ms, as the core does: the end of
     * the last tick must be a millisecond count itself. Decoding then never overflows.
     */
    private Layout checkedLastMs() {
        BigInteger ticks = BigInteger.ONE.shiftLeft(timestampBits);
        BigInteger end = BigInteger.valueOf(epochMs).add(ticks.multiply(BigInteger.valueOf(tickMs)));
        if (end.compareTo(U64_MAX) > 0) {
            throw new IllegalArgumentException("epoch " + epochMs
                    + " ms puts the layout's last tick past the largest millisecond count");
        }
        return this;
    }

    /**
     * Takes an id apart.
     *
     * @param id the id, unsigned: a 64-bit layout's ids past 2^63 are negative longs
     * @throws IllegalArgumentException the id is larger than the layout's largest id
     */
    public Decoded decode(long id) {
        long max = maxId();
        if (Long.compareUnsigned(id, max) > 0) {
            throw new IllegalArgumentException("id " + Long.toUnsignedString(id)
                    + " is out of range for layout " + name + ": its largest id is "
                    + Long.toUnsignedString(max));
        }
        long timestamp = field(id, timestampShift, timestampBits);
        // checkedLastMs keeps epoch + timestamp * tick within 64 unsigned bits, so plain
        // long arithmetic is exact here (it wraps only as an unsigned value would not).
        long unixMs = epochMs + timestamp * tickMs;
        return new Decoded(id, timestamp, unixMs,
                field(id, datacenterShift, datacenterBits),
                field(id, workerShift, workerBits),
                field(id, sequenceShift, sequenceBits));
    }

    /**
     * Takes an id written in decimal apart.
     *
     * @throws IllegalArgumentException the text is not a decimal id, or the id is larger than
     *     the layout's largest id
     */
    public Decoded decode(String id) {
        return decode(parseId(id));
    }

    /**
     * Reads a decimal id, 0 to 2^64 - 1, into a {@code long} holding its unsigned bits.
     *
     * @throws IllegalArgumentException the text is empty, has a character that is no digit,
     *     or is past 2^64 - 1
     */
    public static long parseId(String text) {
        Objects.requireNonNull(text, "id");
        String why = null;
        if (text.isEmpty()) {
            why = "empty input: expected an id";
        } else {
            int position = 0; // in characters (code points), as the core counts
            for (int i = 0; i < text.length(); i += Character.charCount(text.codePointAt(i))) {
                int c = text.codePointAt(i);
                if (c < '0' || c > '9') {
                    why = "invalid character '" + escape(c, '\'') + "' at position " + position
                            + " in decimal id";
                    break;
                }
                position++;
            }
        }
        if (why == null && text.length() > MAX_DIGITS) {
            why = "decimal id has " + text.length() + " characters, more than the " + MAX_DIGITS
                    + " a 64-bit id takes";
        }
        if (why == null) {
            try {
                return Long.parseUnsignedLong(text);
            } catch (NumberFormatException e) {
                why = "decimal id does not fit in 64 bits";
            }
        }
        throw new IllegalArgumentException("cannot parse " + quote(text) + ": " + why);
    }

    /** The digits of 2^64 - 1. */
    private static final int MAX_DIGITS = 20;

    private static long field(long id, int shift, int bits) {
        if (bits == 0) {
            return 0;
        }
        long mask = bits == 64 ? -1L : (1L << bits) - 1;
        return (id >>> shift) & mask;
    }

    private int bits(Field f) {
        switch (f) {
            case DATACENTER:
                return datacenterBits;
            case WORKER:
                return workerBits;
            default:
                return sequenceBits;
        }
    }

    /** The layout as written: a preset's name or {@code custom:T/D/W/S}. */
    public String name() {
        return name;
    }

    /** Bits of the timestamp field. */
    public int timestampBits() {
        return timestampBits;
    }

    /** Bits of a field below the timestamp. */
    public int bitsOf(Field field) {
        return bits(field);
    }

    /** The fields below the timestamp, most significant first. */
    public List<Field> order() {
        return order;
    }

    /** Milliseconds per tick. */
    public long tickMs() {
        return tickMs;
    }

    /** The epoch, in milliseconds since the Unix epoch. */
    public long epochMs() {
        return epochMs;
    }

    /** The largest id, unsigned: {@code -1L} (2^64 - 1) when the layout uses all 64 bits. */
    public long maxId() {
        int total = timestampBits + datacenterBits + workerBits + sequenceBits;
        return total == 64 ? -1L : (1L << total) - 1;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Layout)) {
            return false;
        }
        Layout l = (Layout) o;
        return name.equals(l.name) && timestampBits == l.timestampBits
                && datacenterBits == l.datacenterBits && workerBits == l.workerBits
                && sequenceBits == l.sequenceBits && order.equals(l.order)
                && tickMs == l.tickMs && epochMs == l.epochMs;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, timestampBits, datacenterBits, workerBits, sequenceBits, order,
                tickMs, epochMs);
    }

    @Override
    public String toString() {
        return name + " (" + timestampBits + "/" + datacenterBits + "/" + workerBits + "/"
                + sequenceBits + ", tick " + tickMs + " ms, epoch " + epochMs + " ms)";
    }

    /** Text in double quotes, escaped as the core's messages quote what they were given. */
    static String quote(String text) {
        StringBuilder b = new StringBuilder("\"");
        text.codePoints().forEach(c -> b.append(escape(c, '"')));
        return b.append('"').toString();
    }

    /**
     * A character as the core writes it between {@code quote} marks, a newline, tab, quote
     * mark or backslash escaped with a backslash.
     */
    private static String escape(int c, char quote) {
        switch (c) {
            case '\n':
                return "\\n";
            case '\r':
                return "\\r";
            case '\t':
                return "\\t";
            case 0:
                return "\\0";
            case '\\':
                return "\\\\";
            default:
                return c == quote ? "\\" + quote : Character.toString(c);
        }
    }
}
