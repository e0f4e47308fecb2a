<?php

declare(strict_types=1);

namespace Snowmint;

/**
 * Takes $id (its decimal text, an int or a GMP number) apart with $layout: a preset name or
 * custom:T/D/W/S, with $tickMs and $epochMs replacing the layout's own.
 *
 *     $d = \Snowmint\decode('175928847299117063', 'discord');
 *     [$d->unixMs, $d->datacenter, $d->worker, $d->sequence]; // [1462015105796, 0, 1, 7]
 *
 * @throws DecodeException|LayoutException naming the problem
 */
function decode(
    string|int|\GMP $id,
    string $layout = 'twitter',
    ?int $tickMs = null,
    ?int $epochMs = null,
    string $encoding = 'decimal',
): Decoded {
    return Layout::named($layout, $tickMs, $epochMs)->decode($id, $encoding);
}

/**
 * The unsigned 64-bit value of an id (its decimal text, an int or a GMP number), as
 * Layout::parseId.
 *
 *     \Snowmint\parseId('175928847299117063'); // GMP 175928847299117063
 *
 * @throws DecodeException with the core's message for text that is no decimal id
 */
function parseId(string|int|\GMP $id, string $encoding = 'decimal'): \GMP
{
    return Layout::parseId($id, $encoding);
}
