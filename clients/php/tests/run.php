<?php

declare(strict_types=1);

// A plain runner: every public test* method of every tests/*Test.php class, once per case
// of its #[DataProvider]; prints each failure and "N passed, N failed"; exits 1 on any
// failure, or when it found no test.

namespace Snowmint\Tests;

error_reporting(E_ALL);
set_error_handler(static function (int $level, string $message, string $file, int $line): bool {
    throw new \ErrorException($message, 0, $level, $file, $line);
});

require __DIR__ . '/../src/autoload.php';
require __DIR__ . '/TestCase.php';

$passed = 0;
$failed = 0;
$assertions = 0;
$files = glob(__DIR__ . '/*Test.php') ?: [];
sort($files);
foreach ($files as $file) {
    require $file;
    $class = __NAMESPACE__ . '\\' . basename($file, '.php');
    foreach ((new \ReflectionClass($class))->getMethods(\ReflectionMethod::IS_PUBLIC) as $method) {
        if (!str_starts_with($method->getName(), 'test')) {
            continue;
        }
        $provider = $method->getAttributes(DataProvider::class)[0] ?? null;
        $cases = $provider === null ? ['' => []] : $class::{$provider->newInstance()->method}();
        foreach ($cases as $label => $arguments) {
            $name = "{$class}::{$method->getName()}" . ($provider === null ? '' : " [{$label}]");
            $test = new $class();
            try {
                $method->invokeArgs($test, $arguments);
                $passed++;
            } catch (\Throwable $e) {
                $failed++;
                $where = $e instanceof AssertionFailed ? '' : sprintf(' (%s at %s:%d)', $e::class, $e->getFile(), $e->getLine());
                fwrite(STDOUT, "FAIL {$name}: {$e->getMessage()}{$where}\n");
            }
            $assertions += $test->assertions;
        }
    }
}
fwrite(STDOUT, "{$passed} passed, {$failed} failed ({$assertions} assertions)\n");
exit($failed === 0 && $passed > 0 ? 0 : 1);
