<?php

declare(strict_types=1);

namespace Snowmint\Tests;

/** A failed check, with what was expected and what came. */
final class AssertionFailed extends \Exception
{
}

/** Cases for a test method: the name of a method of the same class that returns them. */
#[\Attribute(\Attribute::TARGET_METHOD)]
final class DataProvider
{
    public function __construct(public readonly string $method)
    {
    }
}

/** The checks the tests use; tests/run.php runs every public test* method of a subclass. */
abstract class TestCase
{
    public int $assertions = 0;

    protected function assertSame(mixed $expected, mixed $actual, string $what = ''): void
    {
        $this->assertions++;
        if ($expected !== $actual) {
            throw new AssertionFailed(sprintf(
                "%sexpected %s, got %s",
                $what === '' ? '' : "{$what}: ",
                self::show($expected),
                self::show($actual),
            ));
        }
    }

    private static function show(mixed $value): string
    {
        return (string) preg_replace('/\s+/', ' ', var_export($value, true));
    }

    protected function assertTrue(bool $condition, string $what): void
    {
        $this->assertions++;
        if (!$condition) {
            throw new AssertionFailed("{$what}: expected true");
        }
    }

    /**
     * Runs $call and returns what it threw, checking its class and, when given, its message.
     *
     * @template T of \Throwable
     * @param class-string<T> $class
     * @return T
     */
    protected function assertThrows(string $class, ?string $message, callable $call): \Throwable
    {
        $this->assertions++;
        try {
            $call();
        } catch (\Throwable $e) {
            if (!$e instanceof $class) {
                throw new AssertionFailed(sprintf('expected %s, got %s: %s', $class, $e::class, $e->getMessage()), 0, $e);
            }
            if ($message !== null) {
                $this->assertSame($message, $e->getMessage(), "message of {$class}");
            }
            return $e;
        }
        throw new AssertionFailed("expected {$class}" . ($message === null ? '' : " \"{$message}\"") . ', nothing was thrown');
    }

    /** The running `snowmint serve --datacenter 1 --worker 7` the tests get ids from. */
    protected static function url(): string
    {
        $url = getenv('SNOWMINT_URL');
        if ($url === false || $url === '') {
            throw new \RuntimeException('SNOWMINT_URL must name a running snowmint serve');
        }
        return $url;
    }

    /**
     * The same kind of server over mutual TLS, the PEM file of the CA that signs its
     * certificate, and a client certificate and key it takes.
     *
     * @return array{string, string, string, string}
     */
    protected static function tlsServer(): array
    {
        $found = [];
        foreach (['SNOWMINT_TLS_URL', 'SNOWMINT_CA', 'SNOWMINT_CLIENT_CERT', 'SNOWMINT_CLIENT_KEY'] as $name) {
            $value = getenv($name);
            if ($value === false || $value === '') {
                throw new \RuntimeException("{$name} must be set: a running snowmint serve over mutual TLS, its CA, a client certificate and its key");
            }
            $found[] = $value;
        }
        return $found;
    }

    /** @return array{layouts: list<array<string, mixed>>, vectors: list<array<string, string>>} */
    protected static function vectors(): array
    {
        static $vectors = null;
        $path = getenv('SNOWMINT_VECTORS') ?: __DIR__ . '/../../../testdata/vectors.json';
        return $vectors ??= json_decode((string) file_get_contents($path), true, 16, JSON_THROW_ON_ERROR);
    }
}
