<?php

declare(strict_types=1);

namespace Snowmint;

/** The server answered with an error status; the message carries the server's own text. */
final class ServerException extends SnowmintException
{
    public function __construct(string $message, public readonly int $status)
    {
        parent::__construct($message, $status);
    }
}
