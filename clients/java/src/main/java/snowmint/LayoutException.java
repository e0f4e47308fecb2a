package snowmint;

/**
 * A layout that is no preset and no valid {@code custom:T/D/W/S}, or a tick or an epoch it
 * cannot take. The message is the core's. An {@link IllegalArgumentException}, as layouts
 * threw before they had a type of their own.
 */
public final class LayoutException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    LayoutException(String message) {
        super(message);
    }
}
