package snowmint;

/**
 * Takes ids apart by a layout's name: {@code Decoder.decode(id, "discord")}. The same as
 * {@code Layout.named(layout).decode(id)}, with the tick and the epoch optionally replaced.
 */
public final class Decoder {
    private Decoder() {}

    /** An id of the Twitter layout, taken apart. */
    public static Decoded decode(long id) {
        return Layout.TWITTER.decode(id);
    }

    /**
     * An id taken apart by a preset or a {@code custom:T/D/W/S} layout.
     *
     * @throws IllegalArgumentException (a {@link LayoutException} or {@link DecodeException}) the layout is unknown or malformed, or the id is
     *     larger than its largest id
     */
    public static Decoded decode(long id, String layout) {
        return decode(id, layout, null, null);
    }

    /**
     * An id taken apart by a layout whose tick and epoch replace the layout's own when not
     * null.
     *
     * @throws IllegalArgumentException (a {@link LayoutException} or {@link DecodeException}) the layout is unknown or malformed, the tick or the
     *     epoch is out of range, or the id is larger than the layout's largest id
     */
    public static Decoded decode(long id, String layout, Long tickMs, Long epochMs) {
        return Layout.named(layout, tickMs, epochMs).decode(id);
    }

    /**
     * An id written in decimal, taken apart by a layout.
     *
     * @throws IllegalArgumentException (a {@link LayoutException} or {@link DecodeException}) the text is not a decimal id, or as
     *     {@link #decode(long, String)}
     */
    public static Decoded decode(String id, String layout) {
        return decode(Layout.parseId(id), layout, null, null);
    }

    /**
     * An id written in decimal, taken apart by a layout with its tick and epoch replaced
     * when not null.
     *
     * @throws IllegalArgumentException (a {@link LayoutException} or {@link DecodeException}) as {@link #decode(long, String, Long, Long)}, or the
     *     text is not a decimal id
     */
    public static Decoded decode(String id, String layout, Long tickMs, Long epochMs) {
        return decode(Layout.parseId(id), layout, tickMs, epochMs);
    }
}
