package snowmint;

import java.io.IOException;

/**
 * A request that got no answer: the server cannot be reached, or did not answer within the
 * timeout. The message names the request; the cause is what the JDK reported.
 */
public final class ConnectionException extends IOException {
    private static final long serialVersionUID = 1L;

    ConnectionException(String message, Throwable cause) {
        super(message, cause);
    }
}
