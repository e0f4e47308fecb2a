package snowmint;

import java.net.URI;

/**
 * The old name of {@link ServerException}, kept so that existing code compiles and runs.
 *
 * <p>It extends the new name, and the client throws it, so that a {@code catch} of either
 * name catches a server's error status. The other way round (the new name a subclass of the
 * old) would catch as well, but would leave the name that stays deriving from one that goes;
 * this way, when this class goes, the client throws {@link ServerException} itself and
 * nothing that names {@link ServerException} changes.
 *
 * @deprecated use {@link ServerException}, the name every snowmint client uses.
 */
@Deprecated
public final class SnowmintHttpException extends ServerException {
    private static final long serialVersionUID = 1L;

    SnowmintHttpException(URI uri, int status, String serverError) {
        super(uri, status, serverError);
    }
}
