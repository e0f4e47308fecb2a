<?php

declare(strict_types=1);

namespace Snowmint;

/** Every error this library throws on purpose, besides \InvalidArgumentException. */
class SnowmintException extends \RuntimeException
{
}
