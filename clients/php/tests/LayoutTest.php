<?php

declare(strict_types=1);

namespace Snowmint\Tests;

use Snowmint\DecodeException;
use Snowmint\Layout;
use Snowmint\LayoutException;

use function Snowmint\decode;
use function Snowmint\parseId;

/**
 * testdata/vectors.json, written by the core: every id decodes to its fields, every
 * documented id as its source says, and every bad input is refused in the core's words.
 */
final class LayoutTest extends TestCase
{
    /** @return array<string, array{array<string, string>}> */
    public static function vectorCases(): array
    {
        $cases = [];
        foreach (self::vectors()['vectors'] as $i => $v) {
            $cases["{$i} {$v['layout']} {$v['id']}"] = [$v];
        }
        return $cases;
    }

    private static function layoutFor(string $name): Layout
    {
        foreach (self::vectors()['layouts'] as $spec) {
            if ($spec['layout'] === $name) {
                return Layout::named($name, (int) $spec['tick_ms'], (int) $spec['epoch_ms']);
            }
        }
        throw new \RuntimeException("no layout {$name} in the vectors");
    }

    /** @param array<string, string> $v */
    #[DataProvider('vectorCases')]
    public function testVector(array $v): void
    {
        $layout = self::layoutFor($v['layout']);
        $forms = [$v['id'], gmp_init($v['id'])];
        if (gmp_cmp($v['id'], PHP_INT_MAX) <= 0) {
            $forms[] = (int) $v['id'];
        }
        foreach ($forms as $id) {
            $d = $layout->decode($id);
            $this->assertSame($v['id'], $d->id, 'id');
            $this->assertSame($v['timestamp'], (string) $d->timestamp, 'timestamp');
            $this->assertSame($v['unix_ms'], (string) $d->unixMs, 'unix_ms');
            $this->assertSame($v['datacenter'], (string) $d->datacenter, 'datacenter');
            $this->assertSame($v['worker'], (string) $d->worker, 'worker');
            $this->assertSame($v['sequence'], (string) $d->sequence, 'sequence');
        }
    }

    public function testTheVectorsCoverEveryPresetAndACustomLayout(): void
    {
        $names = array_column(self::vectors()['layouts'], 'layout');
        $presets = array_values(array_filter($names, static fn (string $n): bool => !str_starts_with($n, 'custom:')));
        $this->assertSame(array_keys(Layout::PRESETS), $presets, 'presets');
        $this->assertTrue(count($names) > count($presets), 'a custom layout is among the vectors');
    }

    public function testEachLayoutIsTheOneTheVectorsList(): void
    {
        foreach (self::vectors()['layouts'] as $spec) {
            $name = $spec['layout'];
            $layout = str_starts_with($name, 'custom:') ? self::layoutFor($name) : Layout::named($name);
            $bits = $spec['bits'];
            ksort($bits);
            $ours = $layout->bits;
            ksort($ours);
            $this->assertSame($bits, $ours, "bits of {$name}");
            $this->assertSame($spec['order'], $layout->order, "order of {$name}");
            $this->assertSame($spec['tick_ms'], (string) $layout->tickMs, "tick of {$name}");
            $this->assertSame($spec['epoch_ms'], (string) $layout->epochMs, "epoch of {$name}");
            $this->assertSame($spec['max_id'], $layout->maxId, "max id of {$name}");
        }
    }

    public function testAnIdPastTheLayoutIsRefusedOneBelowIsNot(): void
    {
        $this->assertSame(4095, decode('9223372036854775807')->sequence);
        $this->assertThrows(DecodeException::class, null, static fn () => decode('9223372036854775808'));
        $this->assertSame('18446744073709551615', decode(gmp_init('18446744073709551615'), 'discord')->id);
    }

    /** @return array<string, array{array<string, string>}> */
    public static function documentedCases(): array
    {
        $cases = [];
        foreach (self::vectors()['documented'] as $i => $d) {
            $cases["{$i} {$d['layout']} {$d['id']}"] = [$d];
        }
        return $cases;
    }

    /** @param array<string, string> $d */
    #[DataProvider('documentedCases')]
    public function testDocumentedId(array $d): void
    {
        $tickMs = isset($d['tick_ms']) ? (int) $d['tick_ms'] : null;
        $epochMs = isset($d['epoch_ms']) ? (int) $d['epoch_ms'] : null;
        $parts = decode($d['id'], $d['layout'], $tickMs, $epochMs);
        $this->assertSame($d['time'], $parts->timeText(), "time: {$d['source']}");
        $this->assertSame($d['timestamp'], (string) $parts->timestamp, "timestamp: {$d['source']}");
        $this->assertSame($d['unix_ms'], (string) $parts->unixMs, "unix_ms: {$d['source']}");
        $this->assertSame($d['datacenter'], (string) $parts->datacenter, "datacenter: {$d['source']}");
        $this->assertSame($d['worker'], (string) $parts->worker, "worker: {$d['source']}");
        $this->assertSame($d['sequence'], (string) $parts->sequence, "sequence: {$d['source']}");
    }

    /** @return array<string, array{array<string, string|bool>}> */
    public static function textCases(): array
    {
        $cases = [];
        foreach (self::vectors()['texts'] as $i => $t) {
            $cases["{$i} {$t['layout']} {$t['text']}"] = [$t];
        }
        return $cases;
    }

    /** @param array<string, string|bool> $t */
    #[DataProvider('textCases')]
    public function testTextReadsAsTheCoreReadsIt(array $t): void
    {
        $layout = self::layoutFor((string) $t['layout']);
        $encoding = (string) ($t['encoding'] ?? 'decimal');
        $this->assertSame($t['id'], gmp_strval($layout->readId((string) $t['text'], $encoding)), 'id');
        $this->assertSame($t['id'], $layout->decode((string) $t['text'], $encoding)->id, 'decoded');
    }

    /** @return array<string, array{array<string, string>}> */
    public static function errorCases(): array
    {
        $cases = [];
        foreach (self::vectors()['errors'] as $i => $e) {
            $cases["{$i} {$e['what']}"] = [$e];
        }
        return $cases;
    }

    /** @param array<string, string> $e */
    #[DataProvider('errorCases')]
    public function testBadInputIsRefusedInTheCoresWords(array $e): void
    {
        $tickMs = isset($e['tick_ms']) ? (int) $e['tick_ms'] : null;
        $epochMs = isset($e['epoch_ms']) ? (int) $e['epoch_ms'] : null;
        [$class, $call] = match ($e['what']) {
            'parse' => [DecodeException::class, static fn () => parseId($e['id'])],
            'decode' => [DecodeException::class, static fn () => decode($e['id'], $e['layout'])],
            'read' => [
                DecodeException::class,
                static fn () => self::layoutFor($e['layout'])->readId($e['id'], $e['encoding'] ?? 'decimal'),
            ],
            default => [LayoutException::class, static fn () => Layout::named($e['layout'], $tickMs, $epochMs)],
        };
        $this->assertThrows($class, $e['message'], $call);
    }

    public function testTheOldNameOfParseIdStillReadsAnId(): void
    {
        $this->assertSame('12', gmp_strval(Layout::idValue('12')));
    }

    public function testTheDefaultLayoutIsTwitterAndTimeIsUtc(): void
    {
        // What the server's GET /v1/decode/1541815603606036480 answers.
        $d = decode(1541815603606036480);
        $this->assertSame(1656432460105, $d->unixMs);
        $this->assertSame('2022-06-28T16:07:40.105Z', $d->timeText());
        $this->assertSame('UTC', $d->time()->getTimezone()->getName());
        $this->assertSame([11, 26, 0], [$d->datacenter, $d->worker, $d->sequence]);
        $this->assertSame('10889-08-02T05:31:50.655Z', decode('18446744073709551615', 'mastodon')->timeText());
    }

    public function testNamesAreCaseInsensitiveAndTickAndEpochReplaceThePresets(): void
    {
        $this->assertSame(1, decode('2125144477650808832', 'DISCORD')->worker);
        $d = decode(1 << 24, 'sonyflake', tickMs: 1, epochMs: 0);
        $this->assertSame([1, 1], [$d->timestamp, $d->unixMs]);
        $custom = decode((5 << 24) | (3 << 14) | 9, 'Custom:39/0/10/14');
        $this->assertSame(
            [5, Layout::TWITTER_EPOCH_MS + 5, 3, 9],
            [$custom->timestamp, $custom->unixMs, $custom->worker, $custom->sequence],
        );
    }

    // Bad id text, ids past their layout and bad layouts are in the shared vectors, with the
    // core's words: testBadInputIsRefusedInTheCoresWords.

    public function testTextThatIsNoUtf8IsNamedByteByByte(): void
    {
        $this->assertThrows(
            DecodeException::class,
            "invalid character '\\xff' at position 2 in decimal id",
            static fn () => decode("12\xff"),
        );
        $this->assertSame('18446744073709551615', decode('18446744073709551615', 'mastodon')->id);
        $this->assertSame(7, decode(str_repeat('0', 19) . '7')->sequence);
    }

    public function testIdsThatAreNoU64AreNamed(): void
    {
        $this->assertThrows(DecodeException::class, 'id -1 is negative', static fn () => decode(-1));
        $this->assertThrows(
            DecodeException::class,
            'id 18446744073709551616 does not fit in 64 bits',
            static fn () => decode(gmp_pow(2, 64), 'discord'),
        );
    }

    public function testBadTicksAndEpochsAreNamed(): void
    {
        $this->assertThrows(
            LayoutException::class,
            'tick length must be at least 1 ms, got 0',
            static fn () => decode(1, tickMs: 0),
        );
        $this->assertThrows(
            LayoutException::class,
            'epoch -1 ms is not a millisecond count 0..=9223372036854775807',
            static fn () => decode(1, epochMs: -1),
        );
        $this->assertThrows(
            LayoutException::class,
            "epoch 1288834974657 ms and tick 1 ms put the layout's last tick past the largest millisecond count 9223372036854775807",
            static fn () => decode(1, 'custom:63/0/0/1'),
        );
    }
}
