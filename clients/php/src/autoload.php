<?php

declare(strict_types=1);

// For use without Composer: what Composer's autoloader does with composer.json's
// "autoload" section (PSR-4 classes under src/, and src/functions.php).
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Snowmint\\')) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen('Snowmint\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
require_once __DIR__ . '/functions.php';
