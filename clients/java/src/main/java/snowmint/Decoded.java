package snowmint;

import java.time.Instant;

/**
 * An id taken apart by a {@link Layout}.
 *
 * <p>{@code id} and {@code unixMs} are unsigned: read them with
 * {@link Long#toUnsignedString(long)}, as {@link #toString()} does.
 *
 * @param id the id
 * @param timestamp ticks since the layout's epoch
 * @param unixMs the start of that tick, in milliseconds since the Unix epoch
 * @param datacenter the datacenter id (0 when the layout has none)
 * @param worker the worker id
 * @param sequence the sequence within the tick
 */
public record Decoded(long id, long timestamp, long unixMs, long datacenter, long worker,
        long sequence) {

    /** The start of the id's tick as an instant. */
    public Instant time() {
        return Instant.ofEpochSecond(Long.divideUnsigned(unixMs, 1000),
                Long.remainderUnsigned(unixMs, 1000) * 1_000_000);
    }

    @Override
    public String toString() {
        return "Decoded[id=" + Long.toUnsignedString(id) + ", time=" + time() + ", unixMs="
                + Long.toUnsignedString(unixMs) + ", timestamp=" + timestamp + ", datacenter="
                + datacenter + ", worker=" + worker + ", sequence=" + sequence + "]";
    }
}
