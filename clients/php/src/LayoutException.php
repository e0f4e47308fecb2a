<?php

declare(strict_types=1);

namespace Snowmint;

/** A layout name that is no preset and no valid custom:T/D/W/S, or a bad tick or epoch. */
final class LayoutException extends SnowmintException
{
}
