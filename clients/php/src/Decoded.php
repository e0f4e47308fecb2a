<?php

declare(strict_types=1);

namespace Snowmint;

/**
 * An id taken apart. The id is a decimal string (it may pass PHP's largest int); the fields
 * are ints. $unixMs is the start of the id's tick in milliseconds since the Unix epoch.
 */
final class Decoded
{
    public function __construct(
        public readonly string $id,
        public readonly int $timestamp,
        public readonly int $unixMs,
        public readonly int $datacenter,
        public readonly int $worker,
        public readonly int $sequence,
    ) {
    }

    /** The id's time in UTC, to the millisecond. */
    public function time(): \DateTimeImmutable
    {
        $time = \DateTimeImmutable::createFromFormat(
            'U.v',
            sprintf('%d.%03d', intdiv($this->unixMs, 1000), $this->unixMs % 1000),
        );
        assert($time !== false);
        // A Unix time reads as +00:00; the zone named UTC is what callers compare with.
        return $time->setTimezone(new \DateTimeZone('UTC'));
    }

    /** The id's time as RFC 3339 in UTC with milliseconds, such as 2016-04-30T11:18:25.796Z. */
    public function timeText(): string
    {
        return $this->time()->format('Y-m-d\TH:i:s.v\Z');
    }
}
