package snowmint;

import static snowmint.TestRunner.check;
import static snowmint.TestRunner.equal;
import static snowmint.TestRunner.failsWith;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Decoding: the shared vectors, the presets' data, and bad input. */
final class DecodeTest {
    private DecodeTest() {}

    static void register(TestRunner r, String vectorsPath) {
        r.test("every vector decodes to its fields", () -> everyVector(vectorsPath));
        r.test("the presets are the vectors' layouts", () -> presetsMatch(vectorsPath));
        r.test("ids past 2^63 decode unsigned", DecodeTest::unsigned);
        r.test("layout names are case-insensitive", DecodeTest::caseInsensitive);
        r.test("tick and epoch replace the layout's own", DecodeTest::tickAndEpoch);
        r.test("bad id text is refused", DecodeTest::badIdText);
        r.test("an id past the layout is refused", DecodeTest::pastTheLayout);
        r.test("bad layouts are refused", DecodeTest::badLayouts);
    }

    private static JsonObject vectors(String path) throws Exception {
        return JsonParser.parseString(Files.readString(Path.of(path))).getAsJsonObject();
    }

    /** The layouts of the file, by spec, with the tick and epoch the file gives them. */
    private static Map<String, Layout> layouts(JsonObject file) {
        Map<String, Layout> layouts = new HashMap<>();
        for (JsonElement e : file.getAsJsonArray("layouts")) {
            JsonObject l = e.getAsJsonObject();
            String spec = l.get("layout").getAsString();
            layouts.put(spec, Layout.named(spec)
                    .withTickMs(Long.parseLong(l.get("tick_ms").getAsString()))
                    .withEpochMs(Long.parseLong(l.get("epoch_ms").getAsString())));
        }
        return layouts;
    }

    private static void everyVector(String path) throws Exception {
        JsonObject file = vectors(path);
        Map<String, Layout> layouts = layouts(file);
        int n = 0;
        for (JsonElement e : file.getAsJsonArray("vectors")) {
            JsonObject v = e.getAsJsonObject();
            String spec = v.get("layout").getAsString();
            String id = v.get("id").getAsString();
            Layout l = layouts.get(spec);
            check(l != null, "vector of an unlisted layout " + spec);
            Decoded d = l.decode(id);
            String at = spec + " id " + id;
            equal(id, Long.toUnsignedString(d.id()), at + " id");
            equal(v.get("timestamp").getAsString(), Long.toUnsignedString(d.timestamp()), at + " timestamp");
            equal(v.get("unix_ms").getAsString(), Long.toUnsignedString(d.unixMs()), at + " unix_ms");
            equal(v.get("datacenter").getAsString(), Long.toUnsignedString(d.datacenter()), at + " datacenter");
            equal(v.get("worker").getAsString(), Long.toUnsignedString(d.worker()), at + " worker");
            equal(v.get("sequence").getAsString(), Long.toUnsignedString(d.sequence()), at + " sequence");
            // The same through the decoder that takes a layout's name, tick and epoch.
            Decoded byName = Decoder.decode(id, spec, l.tickMs(), l.epochMs());
            equal(d, byName, at + " through Decoder");
            n++;
        }
        check(n > 100, "the file holds " + n + " vectors");
    }

    private static void presetsMatch(String path) throws Exception {
        List<String> listed = new ArrayList<>();
        for (JsonElement e : vectors(path).getAsJsonArray("layouts")) {
            JsonObject want = e.getAsJsonObject();
            String spec = want.get("layout").getAsString();
            listed.add(spec);
            // A custom layout is checked by its name alone: its widths are in the name.
            Layout l = Layout.named(spec);
            JsonObject bits = want.getAsJsonObject("bits");
            equal(bits.get("timestamp").getAsInt(), l.timestampBits(), spec + " timestamp bits");
            List<String> order = new ArrayList<>();
            for (Layout.Field f : l.order()) {
                order.add(f.key());
                equal(bits.get(f.key()).getAsInt(), l.bitsOf(f), spec + " " + f.key() + " bits");
            }
            List<String> wantOrder = new ArrayList<>();
            want.getAsJsonArray("order").forEach(o -> wantOrder.add(o.getAsString()));
            equal(wantOrder, order, spec + " order");
            equal(want.get("max_id").getAsString(), Long.toUnsignedString(l.maxId()), spec + " max_id");
            if (!spec.startsWith("custom:")) {
                equal(want.get("tick_ms").getAsString(), Long.toString(l.tickMs()), spec + " tick_ms");
                equal(want.get("epoch_ms").getAsString(), Long.toString(l.epochMs()), spec + " epoch_ms");
            }
        }
        for (Layout preset : Layout.PRESETS) {
            check(listed.contains(preset.name()), "the vectors have no layout " + preset.name());
        }
    }

    private static void unsigned() {
        Decoded d = Decoder.decode("18446744073709551615", "discord");
        equal(-1L, d.id(), "id bits");
        equal("18446744073709551615", Long.toUnsignedString(d.id()), "id");
        equal((1L << 42) - 1, d.timestamp(), "timestamp");
        equal(31L, d.datacenter(), "datacenter");
        equal(31L, d.worker(), "worker");
        equal(4095L, d.sequence(), "sequence");
        equal(Instant.ofEpochMilli(1_420_070_400_000L + (1L << 42) - 1), d.time(), "time");
        check(d.toString().startsWith("Decoded[id=18446744073709551615, time="), d.toString());
    }

    private static void caseInsensitive() {
        equal(Layout.DISCORD, Layout.named("Discord"), "Discord");
        equal(39, Layout.named("CUSTOM:39/0/10/14").timestampBits(), "CUSTOM:");
        Layout spaced = Layout.named("custom: 41/+5/5 /12");
        equal(List.of(41, 5, 5, 12), List.of(spaced.timestampBits(),
                spaced.bitsOf(Layout.Field.DATACENTER), spaced.bitsOf(Layout.Field.WORKER),
                spaced.bitsOf(Layout.Field.SEQUENCE)),
                "widths with spaces and a plus sign, as the core reads them");
        equal(Layout.TWITTER.decode(1L << 22), Decoder.decode(1L << 22), "twitter is the default");
    }

    private static void tickAndEpoch() {
        Decoded d = Decoder.decode(1L << 22, "twitter", 10L, 0L);
        equal(1L, d.timestamp(), "timestamp");
        equal(10L, d.unixMs(), "unix_ms");
        Layout custom = Layout.named("custom:41/5/5/12");
        equal(1L, custom.tickMs(), "a custom layout's tick");
        equal(Layout.TWITTER_EPOCH_MS, custom.epochMs(), "a custom layout's epoch");
    }

    private static void badIdText() throws Exception {
        failsWith(IllegalArgumentException.class,
                "cannot parse \"12a\": invalid character 'a' at position 2 in decimal id",
                () -> Decoder.decode("12a", "twitter"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"-1\": invalid character '-' at position 0 in decimal id",
                () -> Decoder.decode("-1", "twitter"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"1\\t\": invalid character '\\t' at position 1 in decimal id",
                () -> Decoder.decode("1\t", "twitter"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"1'\": invalid character '\\'' at position 1 in decimal id",
                () -> Decoder.decode("1'", "twitter"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"1\\\\\": invalid character '\\\\' at position 1 in decimal id",
                () -> Decoder.decode("1\\", "twitter"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"1\uD83D\uDE002\": invalid character '\uD83D\uDE00' at position 1 in decimal id",
                () -> Decoder.decode("1\uD83D\uDE002", "twitter"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"\": empty input: expected an id",
                () -> Decoder.decode("", "twitter"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"18446744073709551616\": decimal id does not fit in 64 bits",
                () -> Decoder.decode("18446744073709551616", "discord"));
        failsWith(IllegalArgumentException.class,
                "cannot parse \"184467440737095516150\": decimal id has 21 characters, more than the 20 a 64-bit id takes",
                () -> Decoder.decode("184467440737095516150", "discord"));
    }

    private static void pastTheLayout() throws Exception {
        failsWith(IllegalArgumentException.class,
                "id 9223372036854775808 is out of range for layout twitter: its largest id is 9223372036854775807",
                () -> Decoder.decode("9223372036854775808", "twitter"));
        failsWith(IllegalArgumentException.class,
                "id 18446744073709551615 is out of range for layout custom:39/0/10/14: its largest id is 9223372036854775807",
                () -> Decoder.decode(-1L, "custom:39/0/10/14"));
    }

    private static void badLayouts() throws Exception {
        failsWith(IllegalArgumentException.class,
                "unknown layout \"flickr\": expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S",
                () -> Decoder.decode(1L, "flickr"));
        failsWith(IllegalArgumentException.class,
                "custom layout \"custom:41/5/5\" must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12",
                () -> Layout.named("custom:41/5/5"));
        failsWith(IllegalArgumentException.class,
                "custom layout timestamp width \"x\" is not a number of bits 0..=64",
                () -> Layout.named("custom:x/5/5/12"));
        failsWith(IllegalArgumentException.class,
                "custom layout datacenter width \"65\" is not a number of bits 0..=64",
                () -> Layout.named("custom:41/65/5/12"));
        failsWith(IllegalArgumentException.class,
                "custom layout widths add up to 62 bits: they must add up to 63 (bit 63 stays 0) or 64",
                () -> Layout.named("custom:41/5/5/11"));
        failsWith(IllegalArgumentException.class,
                "layout needs at least 1 timestamp bit, got 0",
                () -> Layout.named("custom:0/5/5/53"));
        failsWith(IllegalArgumentException.class,
                "custom layout needs at least 1 sequence bit, got 0",
                () -> Layout.named("custom:52/0/11/0"));
        failsWith(IllegalArgumentException.class,
                "tick length must be at least 1 ms, got 0",
                () -> Decoder.decode(1L, "twitter", 0L, null));
        failsWith(IllegalArgumentException.class,
                "epoch -1 ms is out of range 0..=9223372036854775807",
                () -> Decoder.decode(1L, "twitter", null, -1L));
        // 2^63 ticks of 2 ms end past 2^64 ms.
        failsWith(IllegalArgumentException.class,
                "epoch 1288834974657 ms puts the layout's last tick past the largest millisecond count",
                () -> Decoder.decode(1L, "custom:63/0/0/1", 2L, null));
        // 2^62 ticks of 3 ms from 2^62 ms end at 2^64 ms exactly: past the largest count.
        Layout wide = Layout.named("custom:62/0/0/2").withTickMs(3);
        equal((1L << 62) - 1, wide.withEpochMs((1L << 62) - 1).epochMs(), "the last epoch that fits");
        failsWith(IllegalArgumentException.class,
                "epoch 4611686018427387904 ms puts the layout's last tick past the largest millisecond count",
                () -> wide.withEpochMs(1L << 62));
    }
}
