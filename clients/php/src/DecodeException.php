<?php

declare(strict_types=1);

namespace Snowmint;

/** An id that cannot be read, or that does not fit the layout it is decoded with. */
final class DecodeException extends SnowmintException
{
}
