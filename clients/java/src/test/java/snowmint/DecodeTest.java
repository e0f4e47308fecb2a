package snowmint;

import static snowmint.TestRunner.check;
import static snowmint.TestRunner.equal;
import static snowmint.TestRunner.failsWith;

import com.google.gson.JsonArray;
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
        r.test("every documented id decodes as its source says", () -> documented(vectorsPath));
        r.test("every text reads as the core reads it", () -> texts(vectorsPath));
        r.test("every bad input is refused in the core's words", () -> errors(vectorsPath));
        r.test("ticks and epochs Java cannot hold are refused", DecodeTest::badTicksAndEpochs);
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

    /** A string field of a case of the file, or null when it has none. */
    private static Long number(JsonObject o, String key) {
        return o.has(key) ? Long.parseUnsignedLong(o.get(key).getAsString()) : null;
    }

    private static void documented(String path) throws Exception {
        JsonArray all = vectors(path).getAsJsonArray("documented");
        check(all.size() > 0, "the file holds no documented ids");
        for (JsonElement e : all) {
            JsonObject d = e.getAsJsonObject();
            String at = d.get("source").getAsString();
            Decoded got = Decoder.decode(d.get("id").getAsString(), d.get("layout").getAsString(),
                    number(d, "tick_ms"), number(d, "epoch_ms"));
            equal(Instant.parse(d.get("time").getAsString()), got.time(), at + ": time");
            equal(d.get("timestamp").getAsString(), Long.toUnsignedString(got.timestamp()), at + ": timestamp");
            equal(d.get("unix_ms").getAsString(), Long.toUnsignedString(got.unixMs()), at + ": unix_ms");
            equal(d.get("datacenter").getAsString(), Long.toString(got.datacenter()), at + ": datacenter");
            equal(d.get("worker").getAsString(), Long.toString(got.worker()), at + ": worker");
            equal(d.get("sequence").getAsString(), Long.toString(got.sequence()), at + ": sequence");
        }
    }

    private static void errors(String path) throws Exception {
        JsonArray all = vectors(path).getAsJsonArray("errors");
        check(all.size() > 0, "the file holds no error cases");
        for (JsonElement e : all) {
            JsonObject c = e.getAsJsonObject();
            String message = c.get("message").getAsString();
            switch (c.get("what").getAsString()) {
                case "parse":
                    failsWith(DecodeException.class, message,
                            () -> Layout.parseId(c.get("id").getAsString()));
                    break;
                case "decode":
                    failsWith(DecodeException.class, message,
                            () -> Decoder.decode(c.get("id").getAsString(), c.get("layout").getAsString()));
                    break;
                case "read":
                    failsWith(DecodeException.class, message,
                            () -> Layout.named(c.get("layout").getAsString()).readId(
                                    c.get("id").getAsString(), encodingOf(c)));
                    break;
                default:
                    failsWith(LayoutException.class, message,
                            () -> Layout.named(c.get("layout").getAsString(), number(c, "tick_ms"),
                                    number(c, "epoch_ms")));
            }
        }
    }

    /** A case's encoding, decimal when it names none. */
    private static String encodingOf(JsonObject c) {
        return c.has("encoding") ? c.get("encoding").getAsString() : "decimal";
    }

    private static void texts(String path) throws Exception {
        JsonObject file = vectors(path);
        Map<String, Layout> layouts = layouts(file);
        JsonArray all = file.getAsJsonArray("texts");
        check(all.size() > 0, "the file holds no texts");
        for (JsonElement e : all) {
            JsonObject t = e.getAsJsonObject();
            Layout l = layouts.get(t.get("layout").getAsString());
            String text = t.get("text").getAsString();
            long id = l.readId(text, encodingOf(t));
            equal(Long.toUnsignedString(id), t.get("id").getAsString(), t.toString());
            equal(l.decode(text, encodingOf(t)), l.decode(id), t.toString());
        }
    }

    private static void badTicksAndEpochs() throws Exception {
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
