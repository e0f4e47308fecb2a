package snowmint;

import java.io.IOException;
import java.net.URI;

/**
 * The server answered with an error status: its message says the request, the status and
 * the server's own error text.
 *
 * <p>Not final only for its old name, the deprecated {@link SnowmintHttpException}, which
 * the client throws until that name goes, so that code catching either name catches it. The
 * constructor is package-private: no other subclass can be written.
 */
public class ServerException extends IOException {
    private static final long serialVersionUID = 1L;

    private final URI uri;
    private final int status;
    private final String serverError;

    ServerException(URI uri, int status, String serverError) {
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
