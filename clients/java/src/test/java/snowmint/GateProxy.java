package snowmint;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback HTTP proxy in front of the real server that counts the requests, records what
 * they asked and carried, and holds requests from a given number on until released: the
 * tests see when a client fetches, and what it does while a fetch is under way.
 */
final class GateProxy implements AutoCloseable {
    /** One request as it reached the proxy. */
    record Seen(int number, String pathAndQuery, String authorization) {}

    private final HttpServer server;
    private final ExecutorService pool = Executors.newCachedThreadPool(run -> {
        Thread t = new Thread(run, "gate-proxy");
        t.setDaemon(true);
        return t;
    });
    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1).build();
    private final URI target;
    private final AtomicInteger count = new AtomicInteger();
    private final List<Seen> seen = new CopyOnWriteArrayList<>();
    private final BlockingQueue<Seen> arrivals = new LinkedBlockingQueue<>();
    private final CountDownLatch released = new CountDownLatch(1);
    private final int holdFrom;

    /** A proxy to {@code target} that holds the requests numbered {@code holdFrom} and on. */
    GateProxy(String target, int holdFrom) throws IOException {
        this.target = URI.create(target);
        this.holdFrom = holdFrom;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(pool);
        server.createContext("/", this::handle);
        server.start();
    }

    /** A proxy that holds nothing. */
    GateProxy(String target) throws IOException {
        this(target, Integer.MAX_VALUE);
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Requests seen so far. */
    int count() {
        return count.get();
    }

    List<Seen> seen() {
        return List.copyOf(seen);
    }

    /** The next request to arrive, waiting for it up to 10 s. */
    Seen arrival() throws InterruptedException {
        Seen s = arrivals.poll(10, TimeUnit.SECONDS);
        if (s == null) {
            throw new AssertionError("no request reached the proxy within 10 s");
        }
        return s;
    }

    /** Lets the held requests, and all later ones, through. */
    void release() {
        released.countDown();
    }

    private void handle(HttpExchange ex) throws IOException {
        String pathAndQuery = ex.getRequestURI().getRawPath()
                + (ex.getRequestURI().getRawQuery() == null ? "" : "?" + ex.getRequestURI().getRawQuery());
        Seen s = new Seen(count.incrementAndGet(), pathAndQuery,
                ex.getRequestHeaders().getFirst("Authorization"));
        seen.add(s);
        arrivals.add(s);
        try {
            if (s.number() >= holdFrom) {
                released.await();
            }
            HttpRequest.Builder req = HttpRequest.newBuilder(target.resolve(pathAndQuery)).GET();
            if (s.authorization() != null) {
                req.header("Authorization", s.authorization());
            }
            HttpResponse<byte[]> resp = http.send(req.build(), HttpResponse.BodyHandlers.ofByteArray());
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.sendResponseHeaders(resp.statusCode(), resp.body().length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(resp.body());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            ex.sendResponseHeaders(503, -1);
        } finally {
            ex.close();
        }
    }

    @Override
    public void close() {
        release();
        server.stop(0);
        pool.shutdownNow();
    }
}
