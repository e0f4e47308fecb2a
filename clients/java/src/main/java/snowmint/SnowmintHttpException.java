package snowmint;

import java.io.IOException;
import java.net.URI;

/**
 * The server answered with an error status: its message says the request, the status and
 * the server's own error text.
 */
public final class SnowmintHttpException extends IOException {
    private static final long serialVersionUID = 1L;

    private final URI uri;
    private final int status;
    private final String serverError;

    SnowmintHttpException(URI uri, int status, String serverError) {
        super("GET " + uri + " answered " + status + ": " + serverError);
        this.uri = uri;
        this.status = status;
        this.serverError = serverError;
    }

    /** The request's address. */
    public URI uri() {
        return uri;
    }

    /** The HTTP status, such as 401. */
    public int status() {
        return status;
    }

    /** The server's {@code error} text, or the start of its body when it sent no JSON error. */
    public String serverError() {
        return serverError;
    }
}
