<?php

declare(strict_types=1);

namespace Snowmint\Tests;

use Snowmint\DecodeException;
use Snowmint\Layout;
use Snowmint\LayoutException;

use function Snowmint\decode;

/** Every id of testdata/vectors.json decodes to its fields; decoding's errors are named. */
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
        $this->assertThrows(
            DecodeException::class,
            'id 9223372036854775808 is out of range for layout twitter: its largest id is 9223372036854775807',
            static fn () => decode('9223372036854775808'),
        );
        $this->assertSame('18446744073709551615', decode(gmp_init('18446744073709551615'), 'discord')->id);
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
        $this->assertSame(1, decode('175928847299117063', 'DISCORD')->worker);
        $d = decode(1 << 24, 'sonyflake', tickMs: 1, epochMs: 0);
        $this->assertSame([1, 1], [$d->timestamp, $d->unixMs]);
        $custom = decode((5 << 24) | (3 << 14) | 9, 'Custom:39/0/10/14');
        $this->assertSame(
            [5, Layout::TWITTER_EPOCH_MS + 5, 3, 9],
            [$custom->timestamp, $custom->unixMs, $custom->worker, $custom->sequence],
        );
    }

    public function testBadIdTextIsNamed(): void
    {
        $cases = [
            '' => 'empty input: expected an id',
            'hello' => "invalid character 'h' at position 0 in decimal id",
            '12 3' => "invalid character ' ' at position 2 in decimal id",
            '-1' => "invalid character '-' at position 0 in decimal id",
            "1\n" => "invalid character '\\n' at position 1 in decimal id",
            '12é' => "invalid character 'é' at position 2 in decimal id",
            "12\xff" => "invalid character '\\xff' at position 2 in decimal id",
            str_repeat('0', 21) => 'decimal id has 21 characters, more than the 20 a 64-bit id takes',
            '18446744073709551616' => 'decimal id does not fit in 64 bits',
        ];
        foreach ($cases as $text => $message) {
            $this->assertThrows(DecodeException::class, $message, static fn () => decode((string) $text, 'mastodon'));
        }
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

    public function testBadLayoutsAreNamed(): void
    {
        $syntax = 'must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12';
        $expected = 'expected one of twitter, discord, instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S';
        $cases = [
            'flickr' => "unknown layout \"flickr\": {$expected}",
            'custom41/5/5/12' => "unknown layout \"custom41/5/5/12\": {$expected}",
            'custom:41/5/5' => "custom layout \"custom:41/5/5\" {$syntax}",
            'custom:' => "custom layout \"custom:\" {$syntax}",
            'custom:41/5/5/12/1' => "custom layout \"custom:41/5/5/12/1\" {$syntax}",
            'custom:x/5/5/12' => 'custom layout timestamp width "x" is not a number of bits 0..=64',
            'custom:41/-1/5/12' => 'custom layout datacenter width "-1" is not a number of bits 0..=64',
            'custom:41/5/65/12' => 'custom layout worker width "65" is not a number of bits 0..=64',
            'custom:41/5/5/' => 'custom layout sequence width "" is not a number of bits 0..=64',
            'custom:41/5/5/11' => 'custom layout widths add up to 62 bits: they must add up to 63 (bit 63 stays 0) or 64',
            'custom:43/5/5/12' => 'custom layout widths add up to 65 bits: they must add up to 63 (bit 63 stays 0) or 64',
            'custom:0/31/20/12' => 'layout needs at least 1 timestamp bit, got 0',
            'custom:41/11/11/0' => 'custom layout needs at least 1 sequence bit, got 0',
        ];
        foreach ($cases as $name => $message) {
            $this->assertThrows(LayoutException::class, $message, static fn () => decode(1, $name));
        }
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
