package snowmint;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A plain test runner: every test in {@link DecodeTest}, {@link ClientTest} and
 * {@link TlsTest}, each bounded in time, then "N passed, N failed"; the exit status is 1 when
 * any failed.
 *
 * <p>Environment: {@code SNOWMINT_VECTORS}, the path of testdata/vectors.json;
 * {@code SNOWMINT_URL}, a running {@code snowmint serve --datacenter 1 --worker 7}; and
 * {@code SNOWMINT_TLS_URL}, the same over mutual TLS, whose CA is the PEM file
 * {@code SNOWMINT_CA} and which takes the client certificate {@code SNOWMINT_CLIENT_CERT}
 * with its key {@code SNOWMINT_CLIENT_KEY}.
 */
final class TestRunner {
    /** A test's body. */
    interface Body {
        void run() throws Exception;
    }

    /** No test takes this long unless something hangs: the runner moves on. */
    private static final long TEST_TIMEOUT_S = 60;

    private record Case(String name, Body body) {}

    private final List<Case> cases = new ArrayList<>();

    void test(String name, Body body) {
        cases.add(new Case(name, body));
    }

    public static void main(String[] args) throws Exception {
        TestRunner r = new TestRunner();
        DecodeTest.register(r, env("SNOWMINT_VECTORS"));
        ClientTest.register(r, env("SNOWMINT_URL"));
        TlsTest.register(r, env("SNOWMINT_TLS_URL"), env("SNOWMINT_CA"),
                env("SNOWMINT_CLIENT_CERT"), env("SNOWMINT_CLIENT_KEY"));
        System.exit(r.runAll(args.length > 0 ? args[0] : "") == 0 ? 0 : 1);
    }

    private static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            System.err.println(name + " is not set");
            System.exit(2);
        }
        return v;
    }

    /** Runs the tests whose name contains {@code filter}; returns how many failed. */
    private int runAll(String filter) throws InterruptedException {
        int passed = 0;
        int failed = 0;
        ExecutorService pool = Executors.newCachedThreadPool(run -> {
            Thread t = new Thread(run, "test");
            t.setDaemon(true);
            return t;
        });
        for (Case c : cases) {
            if (!c.name.contains(filter)) {
                continue;
            }
            Future<?> f = pool.submit(() -> {
                c.body.run();
                return null;
            });
            String failure = null;
            try {
                f.get(TEST_TIMEOUT_S, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                f.cancel(true);
                failure = "timed out after " + TEST_TIMEOUT_S + " s";
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                failure = cause.getClass().getSimpleName() + ": " + cause.getMessage();
                StackTraceElement[] trace = cause.getStackTrace();
                for (StackTraceElement el : trace) {
                    if (el.getClassName().startsWith("snowmint.") && el.getFileName() != null
                            && el.getFileName().endsWith("Test.java")) {
                        failure += " (" + el.getFileName() + ":" + el.getLineNumber() + ")";
                        break;
                    }
                }
            }
            if (failure == null) {
                passed++;
                System.out.println("ok   " + c.name);
            } else {
                failed++;
                System.out.println("FAIL " + c.name + ": " + failure);
            }
        }
        pool.shutdownNow();
        System.out.println(passed + " passed, " + failed + " failed");
        return failed;
    }

    // Assertions.

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void equal(Object expected, Object actual, String what) {
        if (!Objects.equals(expected, actual)) {
            throw new AssertionError(what + ": expected " + expected + ", got " + actual);
        }
    }

    /** Runs {@code body}, which must throw {@code type}; returns the exception. */
    static <T extends Throwable> T fails(Class<T> type, Body body) throws Exception {
        try {
            body.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            throw new AssertionError("expected " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("expected " + type.getSimpleName() + ", got no error");
    }

    /** Runs {@code body}, which must throw {@code type} with exactly this message. */
    static <T extends Throwable> T failsWith(Class<T> type, String message, Body body)
            throws Exception {
        T t = fails(type, body);
        equal(message, t.getMessage(), "message");
        return t;
    }
}
