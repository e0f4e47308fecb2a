<?php

declare(strict_types=1);

namespace Snowmint\Tests;

use function Snowmint\decode;

/** snippet.php, the program the page shows, runs against the server and prints a decoded id. */
final class SnippetTest extends TestCase
{
    private const SNIPPET = __DIR__ . '/../snippet.php';

    public function testTheSnippetPrintsAnIdOfThisServerDecoded(): void
    {
        // The snippet as a Composer user has it: beside vendor/autoload.php.
        $dir = sys_get_temp_dir() . '/snowmint-snippet-' . getmypid();
        @mkdir("{$dir}/vendor", 0700, true);
        copy(self::SNIPPET, "{$dir}/snippet.php");
        file_put_contents("{$dir}/vendor/autoload.php", sprintf("<?php\nrequire %s;\n", var_export(realpath(__DIR__ . '/../src/autoload.php'), true)));
        try {
            $process = proc_open(
                [PHP_BINARY, "{$dir}/snippet.php"],
                [1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
                $pipes,
                null,
                ['SNOWMINT_URL' => self::url()] + getenv(),
            );
            $out = (string) stream_get_contents($pipes[1]);
            $err = (string) stream_get_contents($pipes[2]);
            $this->assertSame(0, proc_close($process), "exit status (stderr: {$err})");
        } finally {
            array_map('unlink', ["{$dir}/vendor/autoload.php", "{$dir}/snippet.php"]);
            rmdir("{$dir}/vendor");
            rmdir($dir);
        }
        $this->assertSame(1, preg_match('/\A(\d+) (\S+) datacenter=1 worker=7 sequence=(\d+)\n\z/', $out, $m), "output: {$out}");
        $d = decode($m[1]);
        $this->assertSame([$d->timeText(), $d->sequence], [$m[2], (int) $m[3]]);
    }

    public function testTheSnippetNamesItsLayoutOnceForThePageToReplace(): void
    {
        $this->assertSame(1, substr_count((string) file_get_contents(self::SNIPPET), '"twitter"'));
    }
}
