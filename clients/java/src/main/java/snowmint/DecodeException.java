package snowmint;

/**
 * Text that is no decimal 64-bit id, or an id past its layout's largest id. The message is
 * the core's, word for word. An {@link IllegalArgumentException}, as decoding threw before
 * it had a type of its own.
 */
public final class DecodeException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    DecodeException(String message) {
        super(message);
    }
}
