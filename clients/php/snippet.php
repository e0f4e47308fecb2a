<?php

require __DIR__ . '/vendor/autoload.php';

$client = new Snowmint\Client(getenv('SNOWMINT_URL') ?: 'http://127.0.0.1:8080');
$id = $client->nextId();
$parts = Snowmint\decode($id, "twitter");
printf("%s %s datacenter=%d worker=%d sequence=%d\n", $id, $parts->timeText(), $parts->datacenter, $parts->worker, $parts->sequence);
