<?php

declare(strict_types=1);

namespace Snowmint;

/** The server could not be reached, or did not answer within the timeout. */
final class ConnectionException extends SnowmintException
{
}
