package snowmint;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.NoSuchAlgorithmException;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * Gets ids from a {@code snowmint serve} over HTTP.
 *
 * <p>{@link #nextId()} hands out ids from a local buffer, filled with one
 * {@code GET /v1/ids?count=batchSize}. When a call leaves fewer than {@code refillBelow} ids
 * in it, one more batch is fetched in the background, so the buffer is refilled before it
 * runs dry and a call waits on the network only when the ids run out faster than a batch
 * arrives. {@link #nextIds(int)} hands out the buffered ids first and fetches the rest. All
 * the ids one client hands out increase, since it has at most one request in flight and
 * takes ids in the order the server issued them.
 *
 * <pre>{@code
 * Client client = Client.builder("http://127.0.0.1:8080").build();
 * long id = client.nextId();
 * long[] ids = client.nextIds(10);
 * }</pre>
 *
 * <p>Over TLS, with the CA that signs the server's certificate:
 *
 * <pre>{@code
 * Client client = Client.builder("https://ids.internal:8443")
 *         .caFile(Path.of("/etc/snowmint/ca.pem"))
 *         .build();
 * }</pre>
 *
 * <p>Ids are unsigned 64-bit values in a {@code long}: a server with a 64-bit layout
 * (discord, instagram, tsid, mastodon) issues ids past {@link Long#MAX_VALUE}; print them
 * with {@link Long#toUnsignedString(long)}. A client is safe to share between threads.
 *
 * <p>Not final only so that the deprecated {@link SnowmintClient}, its old name, can extend it.
 */
public class Client {
    /** The most ids one request asks for: the server's default {@code --max-batch}. */
    public static final int MAX_COUNT = 100_000;
    /** Ids fetched at a time, unless the builder says otherwise. */
    public static final int DEFAULT_BATCH_SIZE = 100;
    /** How long a request may take, connecting included, unless the builder says otherwise. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    private final URI base;
    private final String token;
    private final Duration timeout;
    private final int batchSize;
    private final int refillBelow;
    private final HttpClient http;

    /** Ids fetched and not handed out yet, oldest first. Guarded by {@code this}. */
    private final ArrayDeque<Long> buffer = new ArrayDeque<>();
    /** The background refill in flight, or null. Guarded by {@code this}. */
    private CompletableFuture<long[]> refill;

    Client(Builder b) {
        this.base = b.base;
        this.token = b.token;
        this.timeout = b.timeout;
        this.batchSize = b.batchSize;
        this.refillBelow = b.refillBelow == null ? b.batchSize / 4 : b.refillBelow;
        HttpClient.Builder http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(timeout);
        if (b.tls != null) {
            http.sslContext(b.tls);
        }
        this.http = http.build();
    }

    /**
     * A client of the server at this address, with the default batch size, refill threshold
     * and timeout, and no token.
     *
     * @throws IllegalArgumentException the address is not an http or https URL
     */
    public Client(String baseUrl) {
        this(new Builder(baseUrl));
    }

    /**
     * A builder for a client of the server at this address, such as
     * {@code http://127.0.0.1:8080}.
     *
     * @throws IllegalArgumentException the address is not an http or https URL
     */
    public static Builder builder(String baseUrl) {
        return new Builder(baseUrl);
    }

    /**
     * One id, from the local buffer.
     *
     * @throws ServerException the server answered with an error status
     * @throws ConnectionException the server cannot be reached or did not answer in time
     * @throws IOException the server answered
     *     with something that is not ids
     */
    public synchronized long nextId() throws IOException, InterruptedException {
        if (refill != null && refill.isDone()) {
            CompletableFuture<long[]> done = refill;
            refill = null;
            try {
                append(await(done));
            } catch (IOException e) {
                // The buffer still holds ids; a refill that failed is tried again below, and
                // its error reaches the caller when the ids run out.
            }
        }
        if (buffer.isEmpty()) {
            CompletableFuture<long[]> pending = refill != null ? refill : request(batchSize);
            refill = null;
            append(await(pending));
        }
        long id = buffer.removeFirst();
        if (buffer.size() < refillBelow && refill == null) {
            refill = request(batchSize);
        }
        return id;
    }

    /**
     * {@code count} ids in the order the server issued them: the buffered ones first, then
     * fresh ones, in requests of at most {@link #MAX_COUNT}.
     *
     * @throws IllegalArgumentException count is negative
     * @throws ServerException the server answered with an error status
     * @throws ConnectionException the server cannot be reached or did not answer in time
     * @throws IOException the server answered
     *     with something that is not ids
     */
    public synchronized long[] nextIds(int count) throws IOException, InterruptedException {
        if (count < 0) {
            throw new IllegalArgumentException(
                    "count " + count + " is out of range 0..=" + Integer.MAX_VALUE);
        }
        if (refill != null) {
            // Its ids are older than any fetched now: they go first.
            CompletableFuture<long[]> pending = refill;
            refill = null;
            try {
                append(await(pending));
            } catch (IOException e) {
                // Fetched afresh below; an error that lasts shows there.
            }
        }
        // Room for what one request brings; a count too large to hold fails on the network
        // or on memory as the ids arrive, not on the first allocation.
        long[] ids = new long[(int) Math.min(count, (long) buffer.size() + MAX_COUNT)];
        int n = 0;
        while (n < count && !buffer.isEmpty()) {
            ids[n++] = buffer.removeFirst();
        }
        while (n < count) {
            long[] fresh = await(request(Math.min(count - n, MAX_COUNT)));
            if (ids.length - n < fresh.length) {
                ids = Arrays.copyOf(ids, (int) Math.min(count, 2L * ids.length + fresh.length));
            }
            System.arraycopy(fresh, 0, ids, n, fresh.length);
            n += fresh.length;
        }
        return ids;
    }

    /** Ids in the local buffer now. */
    public synchronized int buffered() {
        return buffer.size();
    }

    private void append(long[] ids) {
        for (long id : ids) {
            buffer.addLast(id);
        }
    }

    /** Fetches {@code count} ids: {@code GET /v1/id} for one, {@code /v1/ids} for more. */
    private CompletableFuture<long[]> request(int count) {
        URI uri = base.resolve(count == 1 ? "v1/id" : "v1/ids?count=" + count);
        HttpRequest.Builder req = HttpRequest.newBuilder(uri)
                .timeout(timeout)
                .header("Accept", "application/json")
                .GET();
        if (token != null) {
            req.header("Authorization", "Bearer " + token);
        }
        return http.sendAsync(req.build(), HttpResponse.BodyHandlers.ofString())
                .handle((resp, err) -> {
                    if (err != null) {
                        throw new CompletionException(unreachable(uri, err));
                    }
                    try {
                        return ids(uri, resp, count);
                    } catch (IOException e) {
                        throw new CompletionException(e);
                    }
                });
    }

    private ConnectionException unreachable(URI uri, Throwable err) {
        Throwable cause = err instanceof CompletionException && err.getCause() != null
                ? err.getCause() : err;
        if (cause instanceof HttpTimeoutException) {
            return new ConnectionException(
                    "GET " + uri + " timed out after " + timeout.toMillis() + " ms", cause);
        }
        String untrusted = untrusted(cause) ? "the server's certificate is not trusted: " : "";
        return new ConnectionException("GET " + uri + " failed: " + untrusted + why(cause), cause);
    }

    /** Whether the server's certificate failed the checks: no trusted CA signed it, or it
     * names another host. */
    private static boolean untrusted(Throwable err) {
        for (Throwable t = err; t != null; t = t.getCause()) {
            if (t instanceof CertificateException) {
                return true;
            }
        }
        return false;
    }

    /** The first message down a chain of causes: the JDK's own exceptions often have none. */
    private static String why(Throwable err) {
        for (Throwable t = err; t != null; t = t.getCause()) {
            if (t.getMessage() != null && !t.getMessage().isEmpty()) {
                return t.getMessage();
            }
        }
        return err instanceof ConnectException ? "connection refused" : err.getClass().getName();
    }

    // A SnowmintHttpException is a ServerException that old catches of that name see too.
    @SuppressWarnings("deprecation")
    private static long[] ids(URI uri, HttpResponse<String> resp, int count) throws IOException {
        String body = resp.body();
        if (resp.statusCode() != 200) {
            throw new SnowmintHttpException(uri, resp.statusCode(), errorText(body));
        }
        try {
            JsonObject obj = JsonParser.parseString(body).getAsJsonObject();
            long[] ids = new long[count];
            if (count == 1) {
                ids[0] = Long.parseUnsignedLong(obj.get("id").getAsString());
                return ids;
            }
            JsonArray arr = obj.getAsJsonArray("ids");
            if (arr.size() != count) {
                throw new IOException("GET " + uri + " answered " + arr.size()
                        + " ids, not the " + count + " it asked for");
            }
            for (int i = 0; i < count; i++) {
                ids[i] = Long.parseUnsignedLong(arr.get(i).getAsString());
            }
            return ids;
        } catch (JsonParseException | IllegalStateException | UnsupportedOperationException
                | ClassCastException | NullPointerException | NumberFormatException e) {
            throw new IOException("GET " + uri + " answered 200 with a body that holds no "
                    + (count == 1 ? "{\"id\":\"<decimal>\"}" : "{\"ids\":[\"<decimal>\",...]}")
                    + ": " + start(body), e);
        }
    }

    /** The server's {@code {"error": "..."}} text, or the start of a body that has none. */
    private static String errorText(String body) {
        try {
            JsonElement e = JsonParser.parseString(body).getAsJsonObject().get("error");
            if (e != null && e.isJsonPrimitive()) {
                return e.getAsString();
            }
        } catch (JsonParseException | IllegalStateException e) {
            // Not JSON: the body itself says what it can.
        }
        return body.isEmpty() ? "(empty body)" : start(body);
    }

    /** Enough of a body to recognise it in a message. */
    private static String start(String body) {
        int limit = 200;
        return body.length() <= limit ? body : body.substring(0, limit) + "...";
    }

    private static <T> T await(CompletableFuture<T> f) throws IOException, InterruptedException {
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            throw new IOException(String.valueOf(cause), cause);
        }
    }

    /** Settings for a {@link Client}. Not final only for the deprecated {@link SnowmintClient}. */
    public static class Builder {
        private final URI base;
        private String token;
        private Duration timeout = DEFAULT_TIMEOUT;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private Integer refillBelow;
        private Path caFile;
        private Path certFile;
        private Path keyFile;
        /** Built from the TLS files by {@link #check()}; null for the JDK's defaults. */
        private SSLContext tls;

        Builder(String baseUrl) {
            Objects.requireNonNull(baseUrl, "baseUrl");
            URI uri;
            try {
                uri = new URI(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
            } catch (URISyntaxException e) {
                uri = null;
            }
            if (uri == null || uri.getHost() == null
                    || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))) {
                throw new IllegalArgumentException("base url " + Layout.quote(baseUrl)
                        + " is not an http or https url such as http://127.0.0.1:8080");
            }
            this.base = uri;
        }

        /** The bearer token of a server started with {@code --auth-token}. */
        public Builder token(String token) {
            this.token = Objects.requireNonNull(token, "token");
            return this;
        }

        /**
         * How long a request may take, connecting included (default 5 s).
         *
         * @throws IllegalArgumentException the timeout is not positive
         */
        public Builder timeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout " + timeout + " must be positive");
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * Ids fetched at a time (default 100); 1 fetches each id with {@code GET /v1/id}.
         *
         * @throws IllegalArgumentException the size is out of range 1..={@link #MAX_COUNT}
         */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1 || batchSize > MAX_COUNT) {
                throw new IllegalArgumentException(
                        "batch size " + batchSize + " is out of range 1..=" + MAX_COUNT);
            }
            this.batchSize = batchSize;
            return this;
        }

        /**
         * Fetch the next batch once fewer ids than this are left (default: a quarter of the
         * batch size), 0..=batch size; 0 fetches only when the buffer is empty. Checked by
         * {@link #build()}.
         */
        public Builder refillBelow(int refillBelow) {
            this.refillBelow = refillBelow;
            return this;
        }

        /**
         * For an https server: the PEM file of the CA that signs its certificate (default:
         * the JDK's CAs). Read by {@link #build()}.
         */
        public Builder caFile(Path caFile) {
            this.caFile = Objects.requireNonNull(caFile, "caFile");
            return this;
        }

        /**
         * With {@link #keyFile(Path)}: the PEM client certificate (a chain allowed) for a
         * server started with {@code --tls-client-ca}. Read by {@link #build()}.
         */
        public Builder certFile(Path certFile) {
            this.certFile = Objects.requireNonNull(certFile, "certFile");
            return this;
        }

        /**
         * The client certificate's private key: a PEM {@code PRIVATE KEY} (PKCS#8) file, EC or
         * RSA. Read by {@link #build()}.
         */
        public Builder keyFile(Path keyFile) {
            this.keyFile = Objects.requireNonNull(keyFile, "keyFile");
            return this;
        }

        /**
         * The client.
         *
         * @throws IllegalArgumentException the refill threshold is out of range 0..=batch
         *     size, or a TLS file cannot be read or holds nothing usable (named)
         */
        public Client build() {
            check();
            return new Client(this);
        }

        /** Refuses settings that do not go together, as {@link #build()} says. */
        void check() {
            if (refillBelow != null && (refillBelow < 0 || refillBelow > batchSize)) {
                throw new IllegalArgumentException("refill threshold " + refillBelow
                        + " is out of range 0..=" + batchSize + " (the batch size)");
            }
            if ((certFile == null) != (keyFile == null)) {
                throw new IllegalArgumentException(
                        "certFile and keyFile go together: give both or neither");
            }
            if (caFile != null || certFile != null) {
                tls = sslContext();
            }
        }

        /** The TLS settings from the PEM files, with the JDK's own classes. */
        private SSLContext sslContext() {
            try {
                TrustManager[] trust = null;
                if (caFile != null) {
                    KeyStore roots = KeyStore.getInstance(KeyStore.getDefaultType());
                    roots.load(null, null);
                    int i = 0;
                    for (Certificate ca : certificates("caFile", caFile)) {
                        roots.setCertificateEntry("ca-" + i++, ca);
                    }
                    TrustManagerFactory tmf =
                            TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                    tmf.init(roots);
                    trust = tmf.getTrustManagers();
                }
                KeyManager[] keys = null;
                if (certFile != null) {
                    Certificate[] chain =
                            certificates("certFile", certFile).toArray(new Certificate[0]);
                    KeyStore identity = KeyStore.getInstance("PKCS12");
                    identity.load(null, null);
                    identity.setKeyEntry("client", privateKey(keyFile), new char[0], chain);
                    KeyManagerFactory kmf =
                            KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                    kmf.init(identity, new char[0]);
                    keys = kmf.getKeyManagers();
                }
                SSLContext context = SSLContext.getInstance("TLS");
                context.init(keys, trust, null);
                return context;
            } catch (GeneralSecurityException | IOException e) {
                throw new IllegalArgumentException("TLS settings: " + e.getMessage(), e);
            }
        }

        private static Collection<? extends Certificate> certificates(String what, Path file) {
            byte[] pem = read(what, file);
            Collection<? extends Certificate> certs;
            try {
                certs = CertificateFactory.getInstance("X.509")
                        .generateCertificates(new ByteArrayInputStream(pem));
            } catch (CertificateException e) {
                certs = List.of();
            }
            if (certs.isEmpty()) {
                throw new IllegalArgumentException(
                        what + " " + Layout.quote(file.toString()) + ": holds no PEM certificate");
            }
            return certs;
        }

        private static PrivateKey privateKey(Path file) {
            String pem = new String(read("keyFile", file), StandardCharsets.US_ASCII);
            String begin = "-----BEGIN PRIVATE KEY-----";
            String end = "-----END PRIVATE KEY-----";
            int from = pem.indexOf(begin);
            int to = pem.indexOf(end);
            String noKey = "keyFile " + Layout.quote(file.toString())
                    + ": holds no PEM PRIVATE KEY (PKCS#8)";
            if (from < 0 || to < from) {
                throw new IllegalArgumentException(noKey);
            }
            byte[] der;
            try {
                der = Base64.getMimeDecoder().decode(pem.substring(from + begin.length(), to));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(noKey, e);
            }
            for (String algorithm : new String[] {"EC", "RSA", "Ed25519"}) {
                try {
                    return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
                } catch (InvalidKeySpecException | NoSuchAlgorithmException e) {
                    // Another algorithm, then.
                }
            }
            throw new IllegalArgumentException(noKey + " of EC, RSA or Ed25519");
        }

        private static byte[] read(String what, Path file) {
            try {
                return Files.readAllBytes(file);
            } catch (IOException e) {
                throw new IllegalArgumentException(what + " " + Layout.quote(file.toString())
                        + ": cannot read it: " + e.getClass().getSimpleName(), e);
            }
        }
    }
}
