<?php

declare(strict_types=1);

namespace Snowmint\Tests;

use Snowmint\Client;
use Snowmint\ConnectionException;

use function Snowmint\decode;

/**
 * Ids over TLS from the real server at SNOWMINT_TLS_URL (`snowmint serve --tls-cert ...
 * --tls-key ... --tls-client-ca ...`, datacenter 1, worker 7), whose CA is SNOWMINT_CA and
 * which takes the client certificate SNOWMINT_CLIENT_CERT with its key SNOWMINT_CLIENT_KEY.
 */
final class TlsTest extends TestCase
{
    public function testIdsComeOverHttpsFromAServerTheCaFileVouchesFor(): void
    {
        [$url, $ca, $cert, $key] = self::tlsServer();
        $client = new Client($url, batchSize: 10, caFile: $ca, certFile: $cert, keyFile: $key);
        $ids = [$client->nextId(), ...$client->nextIds(20)];
        $this->assertSame(21, count(array_unique($ids)), 'distinct ids');
        for ($i = 1; $i < count($ids); $i++) {
            $this->assertTrue(gmp_cmp($ids[$i], $ids[$i - 1]) > 0, "id {$ids[$i]} comes after {$ids[$i - 1]}");
        }
        $d = decode($ids[0], 'twitter');
        $this->assertSame([1, 7], [$d->datacenter, $d->worker], 'datacenter and worker');
    }

    public function testWithoutTheCaFileTheServersCertificateIsNotTrusted(): void
    {
        [$url] = self::tlsServer();
        $e = $this->assertThrows(ConnectionException::class, null, fn () => (new Client($url))->nextId());
        $prefix = "cannot get {$url}/v1/ids?count=1000: the server's certificate is not trusted: ";
        $this->assertTrue(str_starts_with($e->getMessage(), $prefix), "\"{$e->getMessage()}\" starts with \"{$prefix}\"");
        $this->assertTrue(str_contains($e->getMessage(), 'certificate verify failed'), "OpenSSL's reason in \"{$e->getMessage()}\"");
    }

    public function testWithoutAClientCertificateTheServerRefuses(): void
    {
        [$url, $ca] = self::tlsServer();
        $e = $this->assertThrows(ConnectionException::class, null, fn () => (new Client($url, caFile: $ca))->nextId());
        $prefix = "cannot get {$url}/v1/ids?count=1000: ";
        $this->assertTrue(str_starts_with($e->getMessage(), $prefix), "\"{$e->getMessage()}\" starts with \"{$prefix}\"");
    }

    public function testACaFileThatCannotBeReadIsNamed(): void
    {
        $this->assertThrows(
            \InvalidArgumentException::class,
            'caFile "/nonexistent/ca.pem": cannot read it: no such readable file',
            fn () => new Client('https://localhost:8443', caFile: '/nonexistent/ca.pem'),
        );
    }

    public function testACertificateWithoutItsKeyIsRefused(): void
    {
        $this->assertThrows(
            \InvalidArgumentException::class,
            'certFile and keyFile go together: give both or neither',
            fn () => new Client('https://localhost:8443', certFile: '/etc/client.pem'),
        );
    }
}
