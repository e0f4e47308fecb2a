package snowmint;

import static snowmint.TestRunner.check;
import static snowmint.TestRunner.equal;
import static snowmint.TestRunner.fails;
import static snowmint.TestRunner.failsWith;

import java.nio.file.Files;
import java.nio.file.Path;
import javax.net.ssl.SSLHandshakeException;

/**
 * The client over TLS: a real {@code snowmint serve --tls-cert ... --tls-key ...
 * --tls-client-ca ... --datacenter 1 --worker 7} whose CA is the PEM file {@code ca}, and
 * which takes the client certificate {@code cert} with its key {@code key}.
 */
final class TlsTest {
    private TlsTest() {}

    static void register(TestRunner r, String url, String ca, String cert, String key) {
        r.test("ids come over https from a server the CA file vouches for",
                () -> idsOverHttps(url, Path.of(ca), Path.of(cert), Path.of(key)));
        r.test("without the CA file the server's certificate is not trusted",
                () -> untrusted(url));
        r.test("without a client certificate the server refuses",
                () -> anonymous(url, Path.of(ca)));
        r.test("bad TLS files are refused, named", TlsTest::badFiles);
    }

    private static void idsOverHttps(String url, Path ca, Path cert, Path key) throws Exception {
        Client client = Client.builder(url).caFile(ca).certFile(cert).keyFile(key)
                .batchSize(10).build();
        long first = client.nextId();
        long[] rest = client.nextIds(20);
        long[] ids = new long[21];
        ids[0] = first;
        System.arraycopy(rest, 0, ids, 1, 20);
        for (int i = 1; i < ids.length; i++) {
            check(Long.compareUnsigned(ids[i - 1], ids[i]) < 0,
                    "ids increase: " + ids[i - 1] + " then " + ids[i]);
        }
        Decoded d = Decoder.decode(first, "twitter");
        equal(1L, d.datacenter(), "datacenter");
        equal(7L, d.worker(), "worker");
    }

    private static void untrusted(String url) throws Exception {
        ConnectionException e = fails(ConnectionException.class, () -> new Client(url).nextId());
        String prefix = "GET " + url + "/v1/ids?count=100 failed: the server's certificate is not trusted: ";
        check(e.getMessage().startsWith(prefix), "\"" + e.getMessage() + "\" starts with \"" + prefix + "\"");
        check(e.getCause() instanceof SSLHandshakeException, "caused by " + e.getCause());
    }

    private static void anonymous(String url, Path ca) throws Exception {
        ConnectionException e = fails(ConnectionException.class,
                () -> Client.builder(url).caFile(ca).build().nextId());
        String prefix = "GET " + url + "/v1/ids?count=100 failed: ";
        check(e.getMessage().startsWith(prefix), "\"" + e.getMessage() + "\" starts with \"" + prefix + "\"");
    }

    private static void badFiles() throws Exception {
        String url = "https://localhost:8443";
        failsWith(IllegalArgumentException.class,
                "caFile \"/nonexistent/ca.pem\": cannot read it: NoSuchFileException",
                () -> Client.builder(url).caFile(Path.of("/nonexistent/ca.pem")).build());
        Path empty = Files.createTempFile("snowmint-java-", ".pem");
        try {
            Files.writeString(empty, "nothing here\n");
            failsWith(IllegalArgumentException.class,
                    "caFile \"" + empty + "\": holds no PEM certificate",
                    () -> Client.builder(url).caFile(empty).build());
            failsWith(IllegalArgumentException.class,
                    "certFile \"" + empty + "\": holds no PEM certificate",
                    () -> Client.builder(url).certFile(empty).keyFile(empty).build());
        } finally {
            Files.delete(empty);
        }
        failsWith(IllegalArgumentException.class,
                "certFile and keyFile go together: give both or neither",
                () -> Client.builder(url).certFile(Path.of("/etc/client.pem")).build());
    }
}
