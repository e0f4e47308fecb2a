package snowmint;

import static snowmint.TestRunner.check;
import static snowmint.TestRunner.equal;
import static snowmint.TestRunner.failsWith;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/** The client against a real {@code snowmint serve --datacenter 1 --worker 7}. */
final class ClientTest {
    private ClientTest() {}

    static void register(TestRunner r, String url) {
        r.test("one id at a time comes from the server's worker", () -> oneAtATime(url));
        r.test("a batch comes from the server's worker", () -> batch(url));
        r.test("a batch hands out the buffered ids first", () -> batchAfterBuffer(url));
        r.test("the buffer is refilled before it runs dry", () -> refillBeforeDry(url));
        r.test("a batch size of 1 asks /v1/id each time", () -> batchOfOne(url));
        r.test("the token goes as a bearer header", () -> bearer(url));
        r.test("threads sharing a client get distinct ids", () -> threads(url));
        r.test("a server error names the request, the status and the server's text",
                () -> serverError(url));
        r.test("an unreachable server is an error, not a hang", ClientTest::unreachable);
        r.test("a silent server times out", ClientTest::silent);
        r.test("bad settings are refused", () -> badSettings(url));
        r.test("the old name of the client still builds one", () -> oldName(url));
        r.test("the old name of the server error still catches one",
                () -> oldServerErrorName(url));
    }

    /** Ids strictly increase, and each decodes to the server's datacenter and worker. */
    private static void fromTheServer(long[] ids) {
        Instant now = Instant.now();
        for (int i = 0; i < ids.length; i++) {
            if (i > 0) {
                check(Long.compareUnsigned(ids[i - 1], ids[i]) < 0,
                        "ids increase: " + ids[i - 1] + " then " + ids[i]);
            }
            Decoded d = Decoder.decode(ids[i], "twitter");
            equal(1L, d.datacenter(), "datacenter of " + d);
            equal(7L, d.worker(), "worker of " + d);
            check(Duration.between(d.time(), now).abs().toHours() < 24,
                    "the id's time " + d.time() + " is within a day of now");
        }
    }

    private static void oneAtATime(String url) throws Exception {
        Client client = Client.builder(url).batchSize(100).build();
        long[] ids = new long[250];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = client.nextId();
        }
        fromTheServer(ids);
    }

    private static void batch(String url) throws Exception {
        Client client = new Client(url);
        long[] ids = client.nextIds(1000);
        equal(1000, ids.length, "ids");
        fromTheServer(ids);
        equal(0, client.nextIds(0).length, "ids for 0");
        // More than one request takes.
        long[] many = client.nextIds(Client.MAX_COUNT + 5);
        equal(Client.MAX_COUNT + 5, many.length, "ids");
        check(Long.compareUnsigned(ids[ids.length - 1], many[0]) < 0, "later batches are later");
        fromTheServer(many);
    }

    private static void batchAfterBuffer(String url) throws Exception {
        try (GateProxy proxy = new GateProxy(url)) {
            Client client = Client.builder(proxy.url())
                    .batchSize(10).refillBelow(0).build();
            long first = client.nextId();
            equal(9, client.buffered(), "buffered after one id");
            long[] ids = client.nextIds(25);
            equal(0, client.buffered(), "buffered after the batch");
            long[] all = new long[26];
            all[0] = first;
            System.arraycopy(ids, 0, all, 1, 25);
            fromTheServer(all);
            List<String> asked = new ArrayList<>();
            proxy.seen().forEach(s -> asked.add(s.pathAndQuery()));
            equal(List.of("/v1/ids?count=10", "/v1/ids?count=16"), asked, "requests");
        }
    }

    /**
     * The second request is held at the proxy: the client hands out its remaining buffered
     * ids while it is under way, so it was sent before the buffer ran dry.
     */
    private static void refillBeforeDry(String url) throws Exception {
        try (GateProxy proxy = new GateProxy(url, 2)) {
            Client client = Client.builder(proxy.url())
                    .batchSize(10).refillBelow(4).build();
            long[] ids = new long[11];
            for (int i = 0; i < 6; i++) {
                ids[i] = client.nextId();
            }
            equal(1, proxy.count(), "requests while 4 ids are left");
            ids[6] = client.nextId(); // leaves 3, under 4: the refill goes out
            equal("/v1/ids?count=10", proxy.arrival().pathAndQuery(), "the first fill");
            equal("/v1/ids?count=10", proxy.arrival().pathAndQuery(), "the refill");
            for (int i = 7; i < 10; i++) {
                ids[i] = client.nextId(); // from the buffer, while the refill is held
            }
            equal(0, client.buffered(), "buffered once the first batch is handed out");
            equal(2, proxy.count(), "requests: one refill at a time");
            proxy.release();
            ids[10] = client.nextId();
            fromTheServer(ids);
            equal(2, proxy.count(), "requests after the refill arrived");
            equal(9, client.buffered(), "buffered from the refill");
        }
    }

    private static void batchOfOne(String url) throws Exception {
        try (GateProxy proxy = new GateProxy(url)) {
            Client client = Client.builder(proxy.url()).batchSize(1).build();
            long[] ids = {client.nextId(), client.nextId(), client.nextIds(1)[0]};
            fromTheServer(ids);
            List<String> asked = new ArrayList<>();
            proxy.seen().forEach(s -> asked.add(s.pathAndQuery()));
            equal(List.of("/v1/id", "/v1/id", "/v1/id"), asked, "requests");
        }
    }

    private static void bearer(String url) throws Exception {
        try (GateProxy proxy = new GateProxy(url)) {
            Client.builder(proxy.url()).token("s3cret").build().nextIds(3);
            new Client(proxy.url()).nextIds(3);
            List<GateProxy.Seen> seen = proxy.seen();
            equal("Bearer s3cret", seen.get(0).authorization(), "with a token");
            equal(null, seen.get(1).authorization(), "without a token");
        }
    }

    private static void threads(String url) throws Exception {
        Client client = Client.builder(url).batchSize(50).build();
        Set<Long> all = ConcurrentHashMap.newKeySet();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<long[]>> futures = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                futures.add(pool.submit(() -> {
                    long[] ids = new long[500];
                    for (int i = 0; i < ids.length; i++) {
                        ids[i] = client.nextId();
                    }
                    return ids;
                }));
            }
            for (Future<long[]> f : futures) {
                long[] ids = f.get();
                fromTheServer(ids); // each thread's ids increase too
                for (long id : ids) {
                    all.add(id);
                }
            }
        } finally {
            pool.shutdownNow();
        }
        equal(2000, all.size(), "distinct ids");
    }

    private static void serverError(String url) throws Exception {
        String base = url.replaceAll("/+$", "") + "/nope";
        ServerException e = failsWith(ServerException.class,
                "GET " + base + "/v1/ids?count=100 answered 404: no route for GET /nope/v1/ids",
                () -> new Client(base).nextId());
        equal(404, e.status(), "status");
        equal("no route for GET /nope/v1/ids", e.serverError(), "server's text");
    }

    /** A loopback port nothing listens on: bound, then closed. */
    private static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void unreachable() throws Exception {
        String url = "http://127.0.0.1:" + closedPort();
        Client client = Client.builder(url).timeout(Duration.ofSeconds(2)).build();
        failsWith(ConnectionException.class,
                "GET " + url + "/v1/ids?count=100 failed: connection refused", client::nextId);
        failsWith(IOException.class,
                "GET " + url + "/v1/ids?count=5 failed: connection refused",
                () -> client.nextIds(5));
        // A count no memory holds is asked for, one request at a time, not allocated up front.
        failsWith(IOException.class,
                "GET " + url + "/v1/ids?count=100000 failed: connection refused",
                () -> client.nextIds(Integer.MAX_VALUE));
    }

    /** A socket that listens and never answers: the connection opens, no reply comes. */
    private static void silent() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            String url = "http://127.0.0.1:" + s.getLocalPort();
            Client client = Client.builder(url)
                    .timeout(Duration.ofMillis(300)).build();
            failsWith(ConnectionException.class,
                    "GET " + url + "/v1/ids?count=100 timed out after 300 ms", client::nextId);
        }
    }

    private static void badSettings(String url) throws Exception {
        failsWith(IllegalArgumentException.class, "batch size 0 is out of range 1..=100000",
                () -> Client.builder(url).batchSize(0));
        failsWith(IllegalArgumentException.class, "batch size 100001 is out of range 1..=100000",
                () -> Client.builder(url).batchSize(100_001));
        failsWith(IllegalArgumentException.class,
                "refill threshold 11 is out of range 0..=10 (the batch size)",
                () -> Client.builder(url).batchSize(10).refillBelow(11).build());
        failsWith(IllegalArgumentException.class,
                "refill threshold -1 is out of range 0..=100 (the batch size)",
                () -> Client.builder(url).refillBelow(-1).build());
        failsWith(IllegalArgumentException.class, "timeout PT0S must be positive",
                () -> Client.builder(url).timeout(Duration.ZERO));
        failsWith(IllegalArgumentException.class,
                "base url \"ftp://127.0.0.1\" is not an http or https url such as http://127.0.0.1:8080",
                () -> new Client("ftp://127.0.0.1"));
        failsWith(IllegalArgumentException.class,
                "base url \"127.0.0.1:8080\" is not an http or https url such as http://127.0.0.1:8080",
                () -> new Client("127.0.0.1:8080"));
        failsWith(IllegalArgumentException.class, "count -1 is out of range 0..=2147483647",
                () -> new Client(url).nextIds(-1));
    }

    /** SnowmintClient, the old name of Client, compiles and runs as before. */
    @SuppressWarnings("deprecation")
    private static void oldName(String url) throws Exception {
        SnowmintClient built = SnowmintClient.builder(url).batchSize(10).refillBelow(2).build();
        fromTheServer(new long[] {built.nextId()});
        Client plain = new SnowmintClient(url);
        fromTheServer(plain.nextIds(2));
    }

    /**
     * SnowmintHttpException, the old name of ServerException, catches what the client
     * throws, with the same accessors.
     */
    @SuppressWarnings("deprecation")
    private static void oldServerErrorName(String url) throws Exception {
        String base = url.replaceAll("/+$", "") + "/nope";
        try {
            new Client(base).nextIds(3);
            throw new AssertionError("no error from " + base);
        } catch (SnowmintHttpException e) {
            check(e instanceof ServerException, "a SnowmintHttpException is a ServerException");
            equal("GET " + base + "/v1/ids?count=3 answered 404: no route for GET /nope/v1/ids",
                    e.getMessage(), "message");
            equal(base + "/v1/ids?count=3", e.uri().toString(), "uri");
            equal(404, e.status(), "status");
            equal("no route for GET /nope/v1/ids", e.serverError(), "server's text");
        }
    }
}
