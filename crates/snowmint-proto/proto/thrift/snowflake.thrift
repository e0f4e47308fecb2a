// Twitter's Snowflake service, as Twitter published it: src/main/thrift/Snowflake.thrift
// of github.com/twitter-archive/snowflake (the Scala server, last released in 2012; the
// file's own copyright line follows). Only this comment is added: the contract is the
// published one, unchanged.
//
// snowmint serves the service Snowflake over the framed transport with the binary protocol
// (`snowmint serve --thrift-addr ADDR`). get_id declares no `throws`, so a refusal (a user
// agent that does not match [a-zA-Z][a-zA-Z0-9-]*, a clock that went back) reaches the
// client as a TApplicationException whose message names the problem. AuditLogEntry is the
// record Twitter's server wrote to its audit log; it is not sent over the service.
//
// get_id answers an i64, which is signed. Twitter's layout keeps bit 63 at 0, but a server
// run with a layout that uses all 64 bits (discord, instagram, tsid, mastodon, a custom
// layout of 64 bits) issues ids past 2^63 - 1 once its time gets there (Instagram's after
// 2046-06-27), and i64 carries them as negative numbers: the id is the i64 plus 2^64
// (Java's Long.toUnsignedString, Go's uint64(), Python's n % 2**64). `snowmint parse` and
// GET /v1/decode read such a negative decimal back as the id, for those layouts.

/* Copyright 2010-2012 Twitter, Inc. */
namespace java com.twitter.service.snowflake.gen

exception InvalidSystemClock {
  1: string message,
}

exception InvalidUserAgentError {
  1: string message,
}

service Snowflake {
  i64 get_worker_id()
  i64 get_timestamp()
  i64 get_id(1:string useragent)
  i64 get_datacenter_id()
}

struct AuditLogEntry {
  1: i64 id,
  2: string useragent,
  3: i64 tag
}
