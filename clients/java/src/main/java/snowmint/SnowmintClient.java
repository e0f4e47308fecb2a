package snowmint;

import java.time.Duration;

/**
 * The old name of {@link Client}, kept so that existing code compiles and runs.
 *
 * @deprecated use {@link Client}, the name every snowmint client uses.
 */
@Deprecated
public final class SnowmintClient extends Client {
    private SnowmintClient(Builder b) {
        super(b);
    }

    /**
     * A client of the server at this address.
     *
     * @deprecated use {@link Client#Client(String)}.
     */
    @Deprecated
    public SnowmintClient(String baseUrl) {
        super(baseUrl);
    }

    /**
     * A builder for a client of the server at this address.
     *
     * @deprecated use {@link Client#builder(String)}.
     */
    @Deprecated
    public static Builder builder(String baseUrl) {
        return new Builder(baseUrl);
    }

    /**
     * Settings for a {@link SnowmintClient}: {@link Client.Builder}'s, building the old type.
     *
     * @deprecated use {@link Client.Builder}.
     */
    @Deprecated
    public static final class Builder extends Client.Builder {
        Builder(String baseUrl) {
            super(baseUrl);
        }

        @Override
        public Builder token(String token) {
            super.token(token);
            return this;
        }

        @Override
        public Builder timeout(Duration timeout) {
            super.timeout(timeout);
            return this;
        }

        @Override
        public Builder batchSize(int batchSize) {
            super.batchSize(batchSize);
            return this;
        }

        @Override
        public Builder refillBelow(int refillBelow) {
            super.refillBelow(refillBelow);
            return this;
        }

        @Override
        public SnowmintClient build() {
            check();
            return new SnowmintClient(this);
        }
    }
}
