<?php

declare(strict_types=1);

namespace Snowmint;

/**
 * How a 64-bit id is cut into fields: the timestamp on top, then datacenter, worker and
 * sequence in the layout's order, a tick length and an epoch. A preset is data, not code:
 * PRESETS is generated from the core's testdata/vectors.json (Presets.php). Ids are
 * unsigned 64-bit values, past PHP's int, so the arithmetic is GMP's.
 */
final class Layout
{
    /** The presets' numbers, from the core: Presets::ALL, generated from testdata/vectors.json. */
    public const PRESETS = Presets::ALL;

    /** Twitter's epoch, 2010-11-04T01:42:54.657Z: the default epoch of a custom layout. */
    public const TWITTER_EPOCH_MS = self::PRESETS['twitter']['epochMs'];

    /** The digits of the largest unsigned 64-bit value, the longest id text. */
    public const MAX_DIGITS = 20;

    private const CUSTOM_PREFIX = 'custom:';
    private const CUSTOM_FIELDS = ['timestamp', 'datacenter', 'worker', 'sequence'];

    /** The largest id, as a decimal string. */
    public readonly string $maxId;

    /**
     * @param array{timestamp: int, datacenter: int, worker: int, sequence: int} $bits
     * @param list<string> $order the three fields below the timestamp, high to low
     */
    private function __construct(
        public readonly string $name,
        public readonly array $bits,
        public readonly array $order,
        public readonly int $tickMs,
        public readonly int $epochMs,
    ) {
        if ($tickMs < 1) {
            throw new LayoutException("tick length must be at least 1 ms, got {$tickMs}");
        }
        if ($epochMs < 0) {
            throw new LayoutException("epoch {$epochMs} ms is not a millisecond count 0..=" . PHP_INT_MAX);
        }
        $this->maxId = gmp_strval(gmp_sub(gmp_pow(2, array_sum($bits)), 1));
        // unixMs is a PHP int: the layout's last millisecond must be one.
        $lastMs = gmp_sub(gmp_add($epochMs, gmp_mul(gmp_pow(2, $bits['timestamp']), $tickMs)), 1);
        if (gmp_cmp($lastMs, gmp_sub(gmp_pow(2, 64), 1)) > 0) {
            // Past every layout's limit: the core's words.
            throw new LayoutException(
                "epoch {$epochMs} ms puts the layout's last tick past the largest millisecond count"
            );
        }
        if (gmp_cmp($lastMs, PHP_INT_MAX) > 0) {
            throw new LayoutException(
                "epoch {$epochMs} ms and tick {$tickMs} ms put the layout's last tick past the largest millisecond count "
                . PHP_INT_MAX
            );
        }
    }

    /**
     * The preset with this name (in any case), or a custom layout written custom:T/D/W/S:
     * timestamp, datacenter, worker and sequence widths, high to low, adding up to 63 or 64.
     * $tickMs and $epochMs replace the preset's own; a custom layout has 1 ms ticks and
     * Twitter's epoch unless told otherwise.
     *
     *     Layout::named('custom:39/0/10/14', tickMs: 10)->maxId; // "9223372036854775807"
     *
     * @throws LayoutException naming the problem
     */
    public static function named(string $name, ?int $tickMs = null, ?int $epochMs = null): self
    {
        if (strcasecmp(substr($name, 0, strlen(self::CUSTOM_PREFIX)), self::CUSTOM_PREFIX) === 0) {
            $spec = self::custom($name);
        } else {
            $spec = self::PRESETS[strtolower($name)] ?? throw new LayoutException(sprintf(
                'unknown layout %s: expected one of %s or custom:T/D/W/S',
                json_encode($name, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE),
                implode(', ', array_keys(self::PRESETS)),
            ));
            $name = strtolower($name);
        }
        return new self($name, $spec['bits'], $spec['order'], $tickMs ?? $spec['tickMs'], $epochMs ?? $spec['epochMs']);
    }

    /**
     * The widths of custom:T/D/W/S, checked as the core checks them.
     *
     * @return array{bits: array{timestamp: int, datacenter: int, worker: int, sequence: int}, order: list<string>, tickMs: int, epochMs: int}
     */
    private static function custom(string $text): array
    {
        $quoted = json_encode($text, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
        $parts = explode('/', substr($text, strlen(self::CUSTOM_PREFIX)));
        if (count($parts) !== 4) {
            throw new LayoutException(
                "custom layout {$quoted} must be custom:T/D/W/S, four bit widths "
                . '(timestamp/datacenter/worker/sequence) such as custom:41/5/5/12'
            );
        }
        $bits = [];
        foreach (self::CUSTOM_FIELDS as $i => $field) {
            // Plain digits only, as the core takes them: no sign, no space.
            $width = $parts[$i];
            if (preg_match('/\A[0-9]{1,3}\z/', $width) !== 1 || (int) $width > 64) {
                $shown = json_encode($parts[$i], JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
                throw new LayoutException("custom layout {$field} width {$shown} is not a number of bits 0..=64");
            }
            $bits[$field] = (int) $width;
        }
        $total = array_sum($bits);
        if ($total !== 63 && $total !== 64) {
            throw new LayoutException(
                "custom layout widths add up to {$total} bits: they must add up to 63 (bit 63 stays 0) or 64"
            );
        }
        if ($bits['timestamp'] === 0) {
            throw new LayoutException('layout needs at least 1 timestamp bit, got 0');
        }
        if ($bits['sequence'] === 0) {
            throw new LayoutException('custom layout needs at least 1 sequence bit, got 0');
        }
        return [
            'bits' => $bits,
            'order' => ['datacenter', 'worker', 'sequence'],
            'tickMs' => 1,
            'epochMs' => self::TWITTER_EPOCH_MS,
        ];
    }

    /**
     * Takes $id apart: its decimal text, an int or a GMP number.
     *
     *     Layout::named('discord')->decode('175928847299117063')->worker; // 1
     *
     * Text is read in $encoding, as readId reads it.
     *
     * @throws DecodeException for text that is no id, and for an id past the layout's
     *     largest (bits the layout never sets)
     */
    public function decode(string|int|\GMP $id, string $encoding = 'decimal'): Decoded
    {
        $value = is_string($id) ? $this->readId($id, $encoding) : self::parseId($id);
        if (gmp_cmp($value, $this->maxId) > 0) {
            throw new DecodeException(sprintf(
                'id %s is out of range for this layout: its largest id is %s',
                gmp_strval($value),
                $this->maxId,
            ));
        }
        $shift = 0;
        $fields = [];
        foreach (array_reverse($this->order) as $field) {
            $width = $this->bits[$field];
            $fields[$field] = gmp_intval(($value >> $shift) & gmp_sub(gmp_pow(2, $width), 1));
            $shift += $width;
        }
        $timestamp = gmp_intval($value >> $shift);
        return new Decoded(
            id: gmp_strval($value),
            timestamp: $timestamp,
            // The constructor checked that the layout's last millisecond is an int.
            unixMs: $this->epochMs + $timestamp * $this->tickMs,
            datacenter: $fields['datacenter'],
            worker: $fields['worker'],
            sequence: $fields['sequence'],
        );
    }

    /**
     * Reads id text in $encoding, as parseId does; and a negative decimal as an id as a
     * signed 64-bit column (SQL bigint, a PHP or Java int) holds it: for a layout of 64
     * bits, the two's complement. A layout of 63 bits has no negative ids, so it refuses one.
     *
     *     Layout::named('instagram')->readId('-8499700661677131895'); // GMP 9947043412032419721
     *
     * @throws DecodeException in the core's words
     */
    public function readId(string $text, string $encoding = 'decimal'): \GMP
    {
        $name = self::encodingNamed($encoding);
        if ($name !== 'decimal' || !str_starts_with($text, '-') || $text === '-') {
            return self::parseId($text, $name);
        }
        try {
            $magnitude = self::parseDecimal(substr($text, 1));
        } catch (DecodeException $e) {
            if ($e->getMessage() !== 'decimal id does not fit in 64 bits') {
                // Positions count the sign.
                throw new DecodeException((string) preg_replace_callback(
                    '/ at position (\d+) /',
                    fn (array $m): string => ' at position ' . ((int) $m[1] + 1) . ' ',
                    $e->getMessage(),
                ));
            }
            $magnitude = gmp_sub(gmp_pow(2, 64), 1);
        }
        $quoted = (string) json_encode($text);
        if (gmp_cmp($magnitude, gmp_pow(2, 63)) > 0) {
            throw new DecodeException(
                "id {$quoted} is below -9223372036854775808, the smallest signed 64-bit number"
            );
        }
        if (gmp_sign($magnitude) !== 0 && array_sum($this->bits) < 64) {
            $layout = str_starts_with($this->name, 'custom') ? 'custom' : $this->name;
            throw new DecodeException(
                "id {$quoted} is negative, but layout {$layout} uses 63 bits: "
                . 'none of its ids is negative, even in a signed 64-bit column'
            );
        }
        return gmp_mod(gmp_neg($magnitude), gmp_pow(2, 64));
    }

    /**
     * The unsigned 64-bit value of an id: its text in $encoding (decimal by default; hex,
     * base32, base62 or binary as the core writes and reads them, never guessed), an int or
     * a GMP number.
     *
     *     Layout::parseId('175928847299117063'); // GMP 175928847299117063
     *     Layout::parseId('8000000000000', 'base32'); // GMP 9223372036854775808
     *
     * @throws DecodeException with the core's message for text that is no id
     */
    public static function parseId(string|int|\GMP $id, string $encoding = 'decimal'): \GMP
    {
        if (is_string($id)) {
            $name = self::encodingNamed($encoding);
            return $name === 'decimal' ? self::parseDecimal($id) : self::parseDigits($id, $name);
        }
        $value = $id instanceof \GMP ? $id : gmp_init($id);
        if (gmp_sign($value) < 0) {
            throw new DecodeException(sprintf('id %s is negative', gmp_strval($value)));
        }
        if (gmp_cmp($value, gmp_sub(gmp_pow(2, 64), 1)) > 0) {
            throw new DecodeException(sprintf('id %s does not fit in 64 bits', gmp_strval($value)));
        }
        return $value;
    }

    /**
     * The old name of parseId, kept so that existing code runs.
     *
     * @deprecated use parseId, the name every snowmint client uses
     * @throws DecodeException
     */
    public static function idValue(string|int|\GMP $id): \GMP
    {
        return self::parseId($id);
    }

    private static function parseDecimal(string $text): \GMP
    {
        if ($text === '') {
            throw new DecodeException('empty input: expected an id');
        }
        // Positions count characters, as the core's do; text that is no UTF-8 counts bytes.
        $chars = preg_split('//u', $text, -1, PREG_SPLIT_NO_EMPTY) ?: str_split($text);
        foreach ($chars as $position => $ch) {
            if (strlen($ch) !== 1 || !ctype_digit($ch)) {
                throw self::invalidCharacter($ch, $position, 'decimal');
            }
        }
        if (count($chars) > self::MAX_DIGITS) {
            throw new DecodeException(sprintf(
                'decimal id has %d characters, more than the %d a 64-bit id takes',
                count($chars),
                self::MAX_DIGITS,
            ));
        }
        $value = gmp_init($text, 10);
        if (gmp_cmp($value, gmp_sub(gmp_pow(2, 64), 1)) > 0) {
            throw new DecodeException('decimal id does not fit in 64 bits');
        }
        return $value;
    }

    /** A character outside an encoding, shown as the core shows one. */
    private static function invalidCharacter(string $ch, int $position, string $encoding): DecodeException
    {
        $shown = match (true) {
            $ch === "'" => "\\'",
            $ch === '\\' => '\\\\',
            $ch === "\0" => '\\0',
            strlen($ch) > 1 || ctype_print($ch) => $ch,
            ord($ch) < 0x80 => trim((string) json_encode($ch), '"'),
            default => sprintf('\\x%02x', ord($ch)),
        };
        return new DecodeException("invalid character '{$shown}' at position {$position} in {$encoding} id");
    }

    /** The encoding a name stands for, in any case, as the core reads names. */
    private static function encodingNamed(string $name): string
    {
        $found = Presets::ENCODING_NAMES[strtolower($name)] ?? null;
        if ($found === null) {
            throw new DecodeException(sprintf(
                'unknown encoding %s: expected one of %s',
                json_encode($name),
                implode(', ', array_keys(Presets::ENCODINGS)),
            ));
        }
        return $found;
    }

    /** Text in an encoding other than decimal, read as the core reads it. */
    private static function parseDigits(string $text, string $name): \GMP
    {
        [$alphabet, $foldCase, $prefixes, $maxLen, $aliases] = Presets::ENCODINGS[$name];
        $prefix = '';
        foreach ($prefixes as $p) {
            if (str_starts_with($text, $p)) {
                $prefix = $p;
                break;
            }
        }
        $digits = substr($text, strlen($prefix));
        if ($digits === '') {
            throw new DecodeException('empty input: expected an id');
        }
        $chars = preg_split('//u', $digits, -1, PREG_SPLIT_NO_EMPTY) ?: str_split($digits);
        $value = gmp_init(0);
        foreach ($chars as $position => $ch) {
            $digit = false;
            if (strlen($ch) === 1 && ord($ch) < 0x80) {
                $digit = $foldCase ? strpos(strtoupper($alphabet), strtoupper($ch)) : strpos($alphabet, $ch);
                $digit = $aliases[strtoupper($ch)] ?? $digit;
            }
            if ($digit === false) {
                throw self::invalidCharacter($ch, strlen($prefix) + $position, $name);
            }
            $value = gmp_add(gmp_mul($value, strlen($alphabet)), $digit);
        }
        if (count($chars) > $maxLen) {
            throw new DecodeException(sprintf(
                '%s id has %d characters, more than the %d a 64-bit id takes',
                $name,
                count($chars),
                $maxLen,
            ));
        }
        if (gmp_cmp($value, gmp_sub(gmp_pow(2, 64), 1)) > 0) {
            throw new DecodeException("{$name} id does not fit in 64 bits");
        }
        return $value;
    }
}
