<?php

declare(strict_types=1);

namespace Snowmint;

/**
 * Ids from a running `snowmint serve`, over HTTP. Ids come from a local buffer filled with
 * `GET /v1/ids?count=batchSize`; a call that leaves fewer than $refillBelow ids in it
 * fetches the next batch before it returns, so the buffer is refilled before it runs dry.
 * Ids are decimal strings (they may pass PHP's largest int), exact, and increase from call
 * to call. After a fork the child drops the parent's buffer, so the two never hand out the
 * same ids.
 *
 *     $client = new Client('http://127.0.0.1:8080');
 *     $client->nextId();     // "2125143866305835008"
 *     $client->nextIds(3);   // ["2125143866305835009", ...]
 */
final class Client
{
    /** The server's default limit on ids per request (its max_batch). */
    public const MAX_PER_REQUEST = 100000;

    public readonly string $baseUrl;
    public readonly int $refillBelow;

    /** @var list<string> ids fetched; those before $head are handed out already */
    private array $buffer = [];
    private int $head = 0;
    private int $requests = 0;
    /** A refill failed: the next one waits until a call finds the buffer short. */
    private bool $refillFailed = false;
    private int $pid;
    /** @var array<string, mixed> the stream context's `ssl` options */
    private array $tls;

    /**
     * @param string|null $token sent as `Authorization: Bearer TOKEN`
     * @param float $timeout seconds for connecting and for the answer
     * @param int|null $refillBelow default: a quarter of $batchSize
     * @param string|null $caFile for an https:// server, the PEM file of the CA that signs
     *     its certificate (default: the system's CAs)
     * @param string|null $certFile with $keyFile, the PEM client certificate for a server
     *     started with --tls-client-ca
     * @param string|null $keyFile the client certificate's PEM private key
     *
     * @throws \InvalidArgumentException naming the bad argument
     */
    public function __construct(
        string $baseUrl,
        private readonly ?string $token = null,
        private readonly float $timeout = 5.0,
        public readonly int $batchSize = 1000,
        ?int $refillBelow = null,
        ?string $caFile = null,
        ?string $certFile = null,
        ?string $keyFile = null,
    ) {
        $this->baseUrl = rtrim($baseUrl, '/');
        $url = parse_url($this->baseUrl);
        if (!is_array($url) || !in_array($url['scheme'] ?? '', ['http', 'https'], true) || !isset($url['host'])) {
            throw new \InvalidArgumentException("base url \"{$baseUrl}\" is not an http:// or https:// url");
        }
        if ($batchSize < 1) {
            throw new \InvalidArgumentException("batchSize {$batchSize} must be a whole number of at least 1");
        }
        $this->refillBelow = $refillBelow ?? max(intdiv($batchSize, 4), 1);
        if ($this->refillBelow < 0 || $this->refillBelow > $batchSize) {
            throw new \InvalidArgumentException("refillBelow {$refillBelow} is out of range 0..={$batchSize}");
        }
        $this->pid = getmypid() ?: 0;
        $this->tls = self::tlsOptions($caFile, $certFile, $keyFile);
    }

    /**
     * The stream context's `ssl` options, each file checked now so that a bad path fails at
     * once.
     *
     * @return array<string, mixed>
     */
    private static function tlsOptions(?string $caFile, ?string $certFile, ?string $keyFile): array
    {
        if (($certFile === null) !== ($keyFile === null)) {
            throw new \InvalidArgumentException('certFile and keyFile go together: give both or neither');
        }
        $options = ['verify_peer' => true, 'verify_peer_name' => true];
        foreach (['caFile' => [$caFile, 'cafile'], 'certFile' => [$certFile, 'local_cert'], 'keyFile' => [$keyFile, 'local_pk']] as $name => [$path, $option]) {
            if ($path === null) {
                continue;
            }
            if (!is_file($path) || !is_readable($path)) {
                throw new \InvalidArgumentException("{$name} \"{$path}\": cannot read it: no such readable file");
            }
            $options[$option] = $path;
        }
        return $options;
    }

    /**
     * One id.
     *
     * @throws ServerException|ConnectionException|SnowmintException when the buffer is empty
     *     and the server fails
     */
    public function nextId(): string
    {
        return $this->nextIds(1)[0];
    }

    /**
     * $count ids, increasing.
     *
     * @return list<string>
     *
     * @throws ServerException with the status and the server's error text
     * @throws ConnectionException when the server cannot be reached or does not answer
     */
    public function nextIds(int $count): array
    {
        if ($count < 1) {
            throw new \InvalidArgumentException("count {$count} must be a whole number of at least 1");
        }
        $this->forgetParentsBuffer();
        while ($this->buffered() < $count) {
            // A call for more than a batch asks for what it lacks, up to the server's
            // default limit per request.
            $this->fill(max($this->batchSize, min($count - $this->buffered(), self::MAX_PER_REQUEST)));
        }
        $ids = array_slice($this->buffer, $this->head, $count);
        $this->head += $count;
        if ($this->buffered() < $this->refillBelow && !$this->refillFailed) {
            try {
                $this->fill($this->batchSize);
            } catch (SnowmintException) {
                // The caller has its ids; the call that finds the buffer short fetches
                // again and throws then.
                $this->refillFailed = true;
            }
        }
        return $ids;
    }

    /** HTTP requests for ids made so far: fills, refills and fetches. */
    public function requests(): int
    {
        return $this->requests;
    }

    /** Ids held in the local buffer. */
    public function buffered(): int
    {
        return count($this->buffer) - $this->head;
    }

    /** A forked child shares its parent's buffer: handing out those ids in both processes would issue each twice. */
    private function forgetParentsBuffer(): void
    {
        $pid = getmypid() ?: 0;
        if ($pid !== $this->pid) {
            $this->pid = $pid;
            $this->buffer = [];
            $this->head = 0;
        }
    }

    private function fill(int $count): void
    {
        $this->requests++;
        $url = "{$this->baseUrl}/v1/ids?count={$count}";
        $body = $this->get($url);
        $ids = $body['ids'] ?? null;
        if (!is_array($ids) || count($ids) !== $count || !array_is_list($ids)) {
            throw new SnowmintException(sprintf('%s answered %s instead of %d ids', $url, substr((string) json_encode($ids), 0, 80), $count));
        }
        $fresh = [];
        foreach ($ids as $id) {
            if (!is_string($id)) {
                throw new SnowmintException(sprintf('%s answered an id that is no string: %s', $url, json_encode($id)));
            }
            try {
                $fresh[] = gmp_strval(Layout::idValue($id));
            } catch (DecodeException $e) {
                throw new SnowmintException("{$url} answered an id that is not one: {$e->getMessage()}", 0, $e);
            }
        }
        $this->buffer = array_merge(array_slice($this->buffer, $this->head), $fresh);
        $this->head = 0;
        $this->refillFailed = false;
    }

    /**
     * The JSON object at $url.
     *
     * @return array<mixed>
     */
    private function get(string $url): array
    {
        $headers = "Accept: application/json\r\n";
        if ($this->token !== null) {
            $headers .= "Authorization: Bearer {$this->token}\r\n";
        }
        $context = stream_context_create(['http' => [
            'method' => 'GET',
            'header' => $headers,
            'timeout' => $this->timeout,
            // Error statuses still give their body: the server's error text.
            'ignore_errors' => true,
        ], 'ssl' => $this->tls]);
        $warning = null;
        $untrusted = null;
        set_error_handler(static function (int $level, string $message) use (&$warning, &$untrusted): bool {
            $warning = $message;
            // OpenSSL's reason comes first; the last warning only says the stream failed.
            if ($untrusted === null && str_contains($message, 'certificate verify failed')) {
                $untrusted = preg_replace('/\s+/', ' ', $message);
            }
            return true;
        });
        $started = microtime(true);
        try {
            $text = file_get_contents($url, false, $context);
        } finally {
            restore_error_handler();
        }
        $statusLine = null;
        foreach ($http_response_header ?? [] as $line) {
            if (str_starts_with($line, 'HTTP/')) {
                $statusLine = $line;
            }
        }
        if ($text === false || $statusLine === null) {
            $why = match (true) {
                $untrusted !== null => "the server's certificate is not trusted: " . preg_replace('/^.*?: /', '', $untrusted),
                microtime(true) - $started >= $this->timeout => "no answer within {$this->timeout} s",
                default => preg_replace('/^.*?: /', '', (string) $warning),
            };
            throw new ConnectionException("cannot get {$url}: {$why}");
        }
        [, $status, $reason] = array_pad(explode(' ', $statusLine, 3), 3, '');
        $body = json_decode($text, true, 8, JSON_BIGINT_AS_STRING);
        if ((int) $status < 200 || (int) $status > 299) {
            $detail = is_array($body) && is_string($body['error'] ?? null) ? $body['error'] : substr($text, 0, 200);
            throw new ServerException("{$url} answered {$status} {$reason}: {$detail}", (int) $status);
        }
        if (!is_array($body)) {
            throw new SnowmintException("{$url} answered with a body that is no JSON object");
        }
        return $body;
    }
}
