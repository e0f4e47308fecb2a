<?php

declare(strict_types=1);

namespace Snowmint\Tests;

use Snowmint\Client;
use Snowmint\ConnectionException;
use Snowmint\ServerException;

use function Snowmint\decode;

/** Ids from the real server at SNOWMINT_URL (datacenter 1, worker 7, layout twitter). */
final class ClientTest extends TestCase
{
    /** @param list<string> $ids */
    private function assertOurs(array $ids): void
    {
        foreach ($ids as $i => $id) {
            $this->assertTrue(is_string($id), 'ids are strings');
            if ($i > 0) {
                $this->assertTrue(gmp_cmp($id, $ids[$i - 1]) > 0, "id {$id} comes after {$ids[$i - 1]}");
            }
            $d = decode($id, 'twitter');
            $this->assertSame([1, 7], [$d->datacenter, $d->worker], "datacenter and worker of {$id}");
        }
    }

    /**
     * Runs $run in a child process and returns what it wrote to the socket it is given.
     *
     * @param callable(resource): void $run
     */
    private static function inChild(callable $run): \Closure
    {
        [$ours, $theirs] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $pid = pcntl_fork();
        if ($pid === 0) {
            fclose($ours);
            $run($theirs);
            fclose($theirs);
            exit(0);
        }
        fclose($theirs);
        // The caller's work happens between the fork and the call of what this returns.
        return static function () use ($ours, $pid): string {
            $written = (string) stream_get_contents($ours);
            fclose($ours);
            pcntl_waitpid($pid, $status);
            return $written;
        };
    }

    public function testOneIdThenABatchAllIncreasingFromThisServer(): void
    {
        $client = new Client(self::url());
        $started = (int) (microtime(true) * 1000);
        $ids = [$client->nextId(), ...$client->nextIds(500), $client->nextId()];
        $this->assertSame(502, count($ids));
        $this->assertOurs($ids);
        $this->assertTrue(abs(decode($ids[0])->unixMs - $started) < 60000, "the id's time is now");
    }

    public function testABatchLargerThanTheBufferComesWholeAndInOrder(): void
    {
        $client = new Client(self::url(), batchSize: 100);
        $ids = [...$client->nextIds(30), ...$client->nextIds(2500), ...$client->nextIds(1)];
        $this->assertSame(2531, count($ids));
        $this->assertOurs($ids);
        $huge = $client->nextIds(100001);
        $this->assertSame(100001, count(array_unique($huge)));
        $sorted = $huge;
        usort($sorted, 'gmp_cmp');
        $this->assertTrue($sorted === $huge, 'a batch of 100001 is in order');
        $this->assertTrue(gmp_cmp($huge[0], $ids[2530]) > 0, 'and comes after the ids before it');
    }

    public function testTheBufferIsRefilledBeforeItRunsDry(): void
    {
        $client = new Client(self::url(), batchSize: 10, refillBelow: 4);
        $first = $client->nextIds(6);
        $this->assertSame([1, 4], [$client->requests(), $client->buffered()], 'one fill; 4 left is not below 4');
        $first[] = $client->nextId();
        $this->assertSame([2, 13], [$client->requests(), $client->buffered()], '3 left: refilled while ids remain');
        $rest = $client->nextIds(13);
        $this->assertSame([3, 10], [$client->requests(), $client->buffered()], 'the 13 came from the buffer, which was refilled');
        $this->assertOurs([...$first, ...$rest]);
    }

    public function testAFailedRefillLeavesTheIdsAndTheErrorComesWhenTheBufferIsShort(): void
    {
        // A loopback listener that answers one request with three ids, then stops
        // listening: the refill that follows is refused.
        $server = stream_socket_server('tcp://127.0.0.1:0');
        $address = stream_socket_get_name($server, false);
        $done = self::inChild(static function () use ($server): void {
            $socket = stream_socket_accept($server, 10);
            while (($line = fgets($socket)) !== false && $line !== "\r\n") {
            }
            $body = '{"ids":["1","2","3"]}';
            fwrite($socket, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                . strlen($body) . "\r\nconnection: close\r\n\r\n{$body}");
            fclose($socket);
        });
        fclose($server);
        $client = new Client("http://{$address}", timeout: 1.0, batchSize: 3, refillBelow: 3);
        $this->assertSame('1', $client->nextId());
        $done();
        $this->assertSame([2, 2], [$client->requests(), $client->buffered()], 'the refill failed, the ids stay');
        $this->assertSame(['2', '3'], [$client->nextId(), $client->nextId()]);
        $this->assertSame(2, $client->requests(), 'no second try until the buffer is short');
        $this->assertThrows(ConnectionException::class, null, static fn () => $client->nextId());
        $this->assertSame(3, $client->requests());
    }

    public function testAForkedChildDoesNotReuseTheParentsBuffer(): void
    {
        $client = new Client(self::url(), batchSize: 100);
        $client->nextId();
        $childs = self::inChild(static function ($out) use ($client): void {
            fwrite($out, $client->nextId());
        });
        $parentNext = $client->nextId();
        $childId = $childs();
        $this->assertTrue(gmp_cmp($childId, $parentNext) > 0, "the child fetched its own ids: {$childId} > {$parentNext}");
    }

    public function testARefusedBatchNamesTheStatusAndTheServersText(): void
    {
        $url = self::url();
        $e = $this->assertThrows(
            ServerException::class,
            "{$url}/v1/ids?count=100001 answered 400 Bad Request: count \"100001\" is out of range: expected a whole number 1..=100000",
            static fn () => (new Client($url, batchSize: 100001))->nextId(),
        );
        $this->assertSame(400, $e->status);
        $this->assertThrows(
            ServerException::class,
            "{$url}/nope/v1/ids?count=1000 answered 404 Not Found: no route for GET /nope/v1/ids",
            static fn () => (new Client("{$url}/nope"))->nextId(),
        );
    }

    public function testAnUnreachableServerIsAConnectionError(): void
    {
        $server = stream_socket_server('tcp://127.0.0.1:0');
        $address = stream_socket_get_name($server, false);
        fclose($server);
        $this->assertThrows(
            ConnectionException::class,
            "cannot get http://{$address}/v1/ids?count=1000: Failed to open stream: Connection refused",
            static fn () => (new Client("http://{$address}"))->nextId(),
        );
    }

    public function testAServerThatNeverAnswersTimesOut(): void
    {
        // Listens, so the connection is made, and never reads or answers.
        $server = stream_socket_server('tcp://127.0.0.1:0');
        $address = stream_socket_get_name($server, false);
        $this->assertThrows(
            ConnectionException::class,
            "cannot get http://{$address}/v1/ids?count=1000: no answer within 0.2 s",
            static fn () => (new Client("http://{$address}", timeout: 0.2))->nextId(),
        );
        fclose($server);
    }

    public function testTheTokenIsSentAndARefusalCarriesTheServersText(): void
    {
        $text = 'missing or wrong bearer token: send `Authorization: Bearer <token>`';
        $body = json_encode(['error' => $text]);
        $server = stream_socket_server('tcp://127.0.0.1:0');
        $address = stream_socket_get_name($server, false);
        // What the server answers to a wrong token, from a loopback listener that also
        // hands back the request's head.
        $head = self::inChild(static function ($out) use ($server, $body): void {
            $socket = stream_socket_accept($server, 10);
            while (($line = fgets($socket)) !== false && $line !== "\r\n") {
                fwrite($out, $line);
            }
            fwrite($socket, "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: "
                . strlen($body) . "\r\nconnection: close\r\n\r\n{$body}");
            fclose($socket);
        });
        $e = $this->assertThrows(
            ServerException::class,
            "http://{$address}/v1/ids?count=1000 answered 401 Unauthorized: {$text}",
            static fn () => (new Client("http://{$address}", token: 'wrong'))->nextIds(2),
        );
        $this->assertSame(401, $e->status);
        $this->assertTrue(str_contains($head(), "Authorization: Bearer wrong\r\n"), 'the token is sent');
        fclose($server);
    }

    public function testBadArgumentsAreNamed(): void
    {
        $url = self::url();
        $cases = [
            'base url "ftp://127.0.0.1" is not an http:// or https:// url' => static fn () => new Client('ftp://127.0.0.1'),
            'batchSize 0 must be a whole number of at least 1' => static fn () => new Client($url, batchSize: 0),
            'refillBelow 11 is out of range 0..=10' => static fn () => new Client($url, batchSize: 10, refillBelow: 11),
            'count 0 must be a whole number of at least 1' => static fn () => (new Client($url))->nextIds(0),
        ];
        foreach ($cases as $message => $call) {
            $this->assertThrows(\InvalidArgumentException::class, $message, $call);
        }
    }
}
