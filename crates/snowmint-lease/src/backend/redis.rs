//! Worker-id leases on Redis (5 or later, standalone): one Lua script per operation, so
//! every acquisition, renewal and release is a single atomic step on the server. The keys
//! are listed on [`RedisRegistry`].
//!
//! The `wW` key alone says whether a worker is held; `expiry` and `cursor` only make
//! finding a free one fast. Acquiring tries, in order: the identity's old worker, if nobody
//! else holds it; the first [`CANDIDATES`] entries of `expiry` whose lease has ended (a
//! released or expired worker); then a sweep of at most [`SWEEP`] workers from `cursor`,
//! which hands out never-used ids in order and finds ids the index does not know (keys
//! deleted by hand). That is O(log U + `CANDIDATES`) Redis operations, U the workers ever
//! handed out, plus O(1) sweep steps while unused ids remain; the whole `SWEEP` is read only
//! when no index entry has ended, i.e. when the datacenter is full. With at most `SWEEP`
//! workers (the default layout has 32) the sweep covers them all, so "exhausted" is exact;
//! above that it is exact as long as the index is intact.
//!
//! Scripts build worker keys from a prefix, which Redis Cluster forbids: use a standalone
//! server (or a primary with replicas).

use std::fmt;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, ConnectionAddr, FromRedisValue, RedisError, Script};

use super::CONNECT_TIMEOUT;
use crate::mark;
use crate::registry::{Claim, Lease, LeaseError, Registry};

/// Entries of the expiry index looked at per acquisition before sweeping.
const CANDIDATES: u32 = 16;
/// Workers the sweep looks at per acquisition: bounds the time one script blocks Redis
/// when the datacenter is full (measured: 1.8 ms for 1,024 held workers; 0.13 ms to find a
/// fresh one among 2^22).
const SWEEP: u64 = 1_024;
/// Lua numbers are doubles: worker ids above this would lose precision.
const MAX_WORKERS: u64 = 1 << 53;
/// Every request answers within this or fails.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Bounds a whole operation, reconnection and script loading included.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(2);

const ACQUIRE: &str = r"
-- KEYS: hwm, sticky, expiry, cursor, layout, incarnation, reach. ARGV: worker key prefix,
-- identity, holder, workers, ttl ms, candidates, sweep, layout, reach ms, then the key
-- prefixes of earlier releases' namespaces. Returns {worker, hwm or nil, old namespaces
-- holding a mark, since, the fleet's reach}, {-1, the recorded layout, 0, 0, 0} when the
-- fleet's layout is another, {-2, the eviction policy, 0, 0, 0} when the server may evict
-- keys, or nil when all are held.
local prefix, identity, holder = ARGV[1], ARGV[2], ARGV[3]
local workers, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
-- A server that may evict keys may evict a lease or a mark: it cannot keep worker ids.
local memory = redis.call('INFO', 'memory')
local policy = string.match(memory, 'maxmemory_policy:([%w-]+)') or 'noeviction'
if tonumber(string.match(memory, 'maxmemory:(%d+)') or 0) > 0 and policy ~= 'noeviction' then
  return {-2, policy, 0, 0, 0}
end
local recorded = redis.call('GET', KEYS[5])
if not recorded then
  redis.call('SET', KEYS[5], ARGV[8])
elseif recorded ~= ARGV[8] then
  return {-1, recorded, 0, 0, 0}
end
local legacy = {}
for i = 10, #ARGV do legacy[#legacy + 1] = ARGV[i] end
-- The largest reach any server of the fleet recorded before it issued.
local reach = tonumber(redis.call('GET', KEYS[7])) or 0
if tonumber(ARGV[9]) > reach then
  reach = tonumber(ARGV[9])
  redis.call('SET', KEYS[7], ARGV[9])
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function id(n) return string.format('%d', n) end
-- Since when this server vouches for what it holds. A restart (from any backup, or from
-- nothing) gives it a new run id; a promotion, a new replication id. Either way, what the
-- records say was written before that instant may be older than what holders last wrote.
-- A restart happened when the process started (uptime is whole seconds, so this errs
-- late, the safe side); a promotion, at the latest now, when it is first seen.
local server, replication = redis.call('INFO', 'server'), redis.call('INFO', 'replication')
local incarnation = (string.match(server, 'run_id:(%w+)') or '') .. ':' ..
  (string.match(replication, 'master_replid:(%w+)') or '')
-- With no record at all (the first use of this server, or keys flushed or evicted by the
-- running server, which keeps its run id), it vouches from now on.
local since = tonumber(redis.call('HGET', KEYS[6], incarnation))
if not since then
  local replid2 = string.match(replication, 'master_replid2:(%w+)') or ''
  if redis.call('EXISTS', KEYS[6]) == 1 and string.match(replid2, '^0*$') then
    since = now - 1000 * tonumber(string.match(server, 'uptime_in_seconds:(%d+)') or 0)
  else
    since = now
  end
  redis.call('DEL', KEYS[6])
  redis.call('HSET', KEYS[6], incarnation, id(since))
end
-- Whether no server of an earlier release holds w under its own namespace.
local function left_free(w)
  for _, p in ipairs(legacy) do
    if redis.call('EXISTS', p .. 'w' .. id(w)) == 1 then return false end
  end
  return true
end
local function take(w)
  redis.call('SET', prefix .. id(w), holder, 'PX', ttl)
  redis.call('ZADD', KEYS[3], id(now + ttl), id(w))
  redis.call('HSET', KEYS[2], identity, id(w))
  -- The largest of the fleet's mark and those earlier releases left (a corrupt one is
  -- returned as it is, for the client to name).
  local mark = redis.call('HGET', KEYS[1], id(w))
  local holding = 0
  for _, p in ipairs(legacy) do
    local left = redis.call('HGET', p .. 'hwm', id(w))
    if left then
      holding = holding + 1
      local n = tonumber(left)
      if not n or not mark or not tonumber(mark) or n > tonumber(mark) then mark = left end
    end
  end
  return {w, mark, holding, since, reach}
end
local old = tonumber(redis.call('HGET', KEYS[2], identity))
if old and old >= 0 and old < workers then
  local current = redis.call('GET', prefix .. id(old))
  if (not current or current == holder) and left_free(old) then return take(old) end
end
local ended = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, ARGV[6])
for _, member in ipairs(ended) do
  local left = redis.call('PTTL', prefix .. member)
  if left == -2 then
    local w = tonumber(member)
    if w and w >= 0 and w < workers and left_free(w) then return take(w) end
  else
    -- Held although its entry says it ended (the server's clock jumped, or the key was
    -- written by hand): correct the entry so it stops coming first.
    redis.call('ZADD', KEYS[3], id(now + (left >= 0 and left or ttl)), member)
  end
end
local start = tonumber(redis.call('GET', KEYS[4])) or 0
if start >= workers then start = 0 end
local budget = math.min(workers, tonumber(ARGV[7]))
for i = 0, budget - 1 do
  local w = (start + i) % workers
  if redis.call('EXISTS', prefix .. id(w)) == 0 and left_free(w) then
    redis.call('SET', KEYS[4], id((w + 1) % workers))
    return take(w)
  end
end
redis.call('SET', KEYS[4], id((start + budget) % workers))
return nil
";

const RENEW: &str = r"
-- KEYS: the worker, hwm, expiry. ARGV: holder, worker, ttl ms, hwm.
-- Returns 1 when renewed, 0 when the lease is gone, 2 when another holder has it.
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
if current ~= ARGV[1] then return 2 end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[3], string.format('%d', now + tonumber(ARGV[3])), ARGV[2])
local mark = tonumber(redis.call('HGET', KEYS[2], ARGV[2]))
if not mark or mark < tonumber(ARGV[4]) then redis.call('HSET', KEYS[2], ARGV[2], ARGV[4]) end
return 1
";

const RELEASE: &str = r"
-- KEYS: the worker, hwm, expiry. ARGV: holder, worker, hwm.
-- Returns 1 when released, 0 when the lease was not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('DEL', KEYS[1])
redis.call('ZADD', KEYS[3], 0, ARGV[2])
return 1
";

static SCRIPTS: LazyLock<[Script; 3]> =
    LazyLock::new(|| [ACQUIRE, RENEW, RELEASE].map(Script::new));

/// Leases worker ids through Redis, one Lua script per operation.
///
/// Keys, for a claim's namespace `NS` and datacenter `D`:
///
/// ```text
/// snowmint:NS:dcD:wW      string  the holder of worker W, with a PX TTL: it expires by itself
/// snowmint:NS:dcD:hwm     hash    W -> high-water mark (ms since the Unix epoch); never expires
/// snowmint:NS:dcD:sticky  hash    identity -> the worker it last acquired
/// snowmint:NS:dcD:expiry  zset    W -> when its lease ends (Redis time, ms); 0 once released
/// snowmint:NS:dcD:cursor  string  where the next sweep for a free worker starts
/// snowmint:NS:layout      string  the fleet's layout in canonical form; never expires
/// snowmint:NS:reach       string  the largest reach (ms) of the fleet's servers
/// snowmint:incarnation    hash    run id:replication id -> since when the server vouches
///                                 for its records (Redis time, ms); one field
/// ```
///
/// A Redis that restarts (from a backup, an old snapshot, or nothing) or is promoted from
/// a replica may lack what holders wrote last: a lease taken from it starts after
/// [`Claim::floor_after`] the instant it started or was first seen promoted, so that it
/// issues nothing that a holder it forgot may have issued.
///
/// `NS` is the fleet's namespace (`fleet.default`). Earlier releases used the layout's
/// name and epoch (`twitter-1288834974657`) instead: an acquisition passes over a worker
/// whose `wW` key is held under one of the claim's [`legacy`](Claim::legacy) namespaces,
/// and starts after the largest of the marks left in their `hwm` hashes.
pub struct RedisRegistry {
    client: Client,
    /// The URL without credentials, for messages.
    shown: String,
    /// Made on first use, on the runtime that uses it; reconnects by itself.
    connection: Mutex<Option<ConnectionManager>>,
}

impl RedisRegistry {
    /// A registry for `redis://[USER:PASSWORD@]HOST[:PORT][/DB]`; connects on first use.
    ///
    /// # Errors
    ///
    /// A malformed URL, named in the message (without its password).
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint_lease::{Registry, RedisRegistry};
    ///
    /// let registry = RedisRegistry::from_url("redis://127.0.0.1:6379/2")?;
    /// assert_eq!(registry.backend(), "redis");
    /// let err = RedisRegistry::from_url("redis://:secret@h:6379/x").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "lease URL \"redis://***@h:6379/x\": invalid database number; expected redis://HOST:PORT[/DB]"
    /// );
    /// # Ok::<(), snowmint_lease::LeaseError>(())
    /// ```
    pub fn from_url(url: &str) -> Result<RedisRegistry, LeaseError> {
        let invalid = |why: &str| {
            LeaseError::Invalid(format!(
                "lease URL {:?}: {why}expected redis://HOST:PORT[/DB]",
                redacted(url)
            ))
        };
        if !url.starts_with("redis://") {
            return Err(invalid(""));
        }
        let client = Client::open(url).map_err(|e| {
            // The crate says "Missing hostname - InvalidClientConfig": keep the first part.
            let why = e.to_string();
            let why = why.split(" - ").next().unwrap_or_default();
            let mut chars = why.chars();
            let first = chars.next().map(|c| c.to_lowercase().to_string());
            invalid(&format!(
                "{}{}; ",
                first.unwrap_or_default(),
                chars.as_str()
            ))
        })?;
        let info = client.get_connection_info();
        let ConnectionAddr::Tcp(host, port) = info.addr() else {
            return Err(invalid(""));
        };
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let shown = format!("redis://{host}:{port}/{}", info.redis_settings().db());
        Ok(RedisRegistry {
            client,
            shown,
            connection: Mutex::new(None),
        })
    }

    fn connection(&self) -> Result<ConnectionManager, LeaseError> {
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(connection) = slot.as_ref() {
            return Ok(connection.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            // One quick retry per reconnection; the keeper retries beyond that.
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let connection = ConnectionManager::new_lazy_with_config(self.client.clone(), config)
            .map_err(|e| self.unavailable(e))?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// A connection whose requests time out may never recover (a proxy that dropped it):
    /// the next operation starts a fresh one.
    fn forget_connection(&self) {
        *self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Unavailable because of `err`, which says what the connection met.
    fn unavailable(&self, err: RedisError) -> LeaseError {
        LeaseError::unavailable_because("redis", &self.shown, err)
    }

    /// Runs a script, once more if the connection failed: each script is safe to repeat
    /// for the same holder (acquiring again returns the worker it already holds).
    async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[String],
        args: &[String],
    ) -> Result<T, LeaseError> {
        let once = || async {
            let mut connection = self.connection()?;
            let mut invocation = script.prepare_invoke();
            for key in keys {
                invocation.key(key);
            }
            for arg in args {
                invocation.arg(arg);
            }
            let result: Result<T, RedisError> = invocation.invoke_async(&mut connection).await;
            Ok::<_, LeaseError>(result)
        };
        let attempts = async {
            let result = match once().await? {
                Err(err) if err.is_io_error() && !err.is_timeout() => once().await?,
                result => result,
            };
            result.map_err(|err| {
                if err.is_timeout() {
                    self.forget_connection();
                }
                self.unavailable(err)
            })
        };
        super::within(OPERATION_TIMEOUT, attempts, || {
            self.forget_connection();
            let ms = OPERATION_TIMEOUT.as_millis();
            LeaseError::unavailable("redis", format!("{}: no answer within {ms} ms", self.shown))
        })
        .await
    }
}

impl fmt::Debug for RedisRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRegistry")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

/// The hash that records since when the server vouches for its records: one field, the
/// server's incarnation (run id and replication id), whose value is that instant.
const INCARNATION: &str = "snowmint:incarnation";

/// `snowmint:NS:dcD:`, the prefix of every key of a datacenter.
fn prefix(namespace: &str, datacenter: u64) -> String {
    format!("snowmint:{namespace}:dc{datacenter}:")
}

/// The keys the renew and release scripts touch: the worker, `hwm` and `expiry`.
fn lease_keys(claim: &Claim, lease: &Lease) -> [String; 3] {
    let p = prefix(&claim.namespace, lease.datacenter);
    [
        format!("{p}w{}", lease.worker),
        format!("{p}hwm"),
        format!("{p}expiry"),
    ]
}

fn ttl_ms(claim: &Claim) -> Result<u64, LeaseError> {
    match u64::try_from(claim.ttl.as_millis()) {
        Ok(ms) if ms > 0 => Ok(ms),
        _ => Err(LeaseError::Invalid(format!(
            "lease TTL {:?} must be a whole number of milliseconds, at least 1",
            claim.ttl
        ))),
    }
}

/// The URL with any user name and password replaced by `***`.
fn redacted(url: &str) -> String {
    let Some(rest) = url.strip_prefix("redis://") else {
        return url.to_string();
    };
    let authority = rest.find(['/', '?', '#']).map_or(rest, |end| &rest[..end]);
    match authority.rfind('@') {
        Some(at) => format!("redis://***{}", &rest[at..]),
        None => url.to_string(),
    }
}

#[async_trait::async_trait]
impl Registry for RedisRegistry {
    fn backend(&self) -> &'static str {
        "redis"
    }

    async fn acquire(&self, claim: &Claim) -> Result<Lease, LeaseError> {
        if claim.workers == 0 || claim.workers > MAX_WORKERS {
            return Err(LeaseError::Invalid(format!(
                "{} worker ids are out of range for the redis registry: 1..=2^53",
                claim.workers
            )));
        }
        let p = prefix(&claim.namespace, claim.datacenter);
        let mut keys = ["hwm", "sticky", "expiry", "cursor"]
            .map(|k| format!("{p}{k}"))
            .to_vec();
        keys.push(format!("snowmint:{}:layout", claim.namespace));
        keys.push(INCARNATION.to_string());
        keys.push(format!("snowmint:{}:reach", claim.namespace));
        let mut args = vec![
            format!("{p}w"),
            claim.identity.clone(),
            claim.holder.clone(),
            claim.workers.to_string(),
            ttl_ms(claim)?.to_string(),
            CANDIDATES.to_string(),
            SWEEP.to_string(),
            claim.layout.clone(),
            claim.reach_ms().to_string(),
        ];
        args.extend(claim.legacy.iter().map(|ns| prefix(ns, claim.datacenter)));
        // The mark as stored, read here rather than by the client library's conversion, so
        // that a corrupt one is named with its key.
        type Taken = (i64, Option<Vec<u8>>, Option<u64>, u64, u64);
        let taken: Option<Taken> = self.run(&SCRIPTS[0], &keys, &args).await?;
        let Some((worker, stored, holding, since, reach)) = taken else {
            return Err(LeaseError::Exhausted {
                datacenter: claim.datacenter,
                workers: claim.workers,
            });
        };
        let Ok(worker) = u64::try_from(worker) else {
            let recorded = String::from_utf8_lossy(stored.as_deref().unwrap_or_default());
            if worker == -2 {
                return Err(LeaseError::unavailable(
                    "redis",
                    format!(
                        "{}: maxmemory-policy {recorded} may evict the keys of leases and marks; set maxmemory-policy noeviction (or maxmemory 0)",
                        self.shown
                    ),
                ));
            }
            return Err(claim.other_layout(&recorded).unwrap_or_else(|| {
                LeaseError::unavailable("redis", format!("{}: refused the layout", self.shown))
            }));
        };
        if holding.unwrap_or(0) > 1 {
            tracing::warn!(
                worker,
                namespaces = ?claim.legacy,
                "marks of this worker id were left under several namespaces of earlier releases; starting after the largest"
            );
        }
        let high_water_ms = stored
            .map(|bytes| mark::decode(&bytes))
            .transpose()
            .map_err(|corrupt| {
                let shown = &self.shown;
                LeaseError::unavailable(
                    "redis",
                    format!(
                        "{shown}: field {worker} of {} is corrupt: {corrupt}",
                        keys[0]
                    ),
                )
            })?;
        Ok(Lease {
            datacenter: claim.datacenter,
            worker,
            high_water_ms: claim
                .clone()
                .reaching(reach)
                .start_after(high_water_ms, since, worker),
            token: 0,
        })
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: &Lease,
        high_water_ms: u64,
    ) -> Result<(), LeaseError> {
        let args = [
            claim.holder.clone(),
            lease.worker.to_string(),
            ttl_ms(claim)?.to_string(),
            mark::encode(high_water_ms),
        ];
        let reason = match self
            .run(&SCRIPTS[1], &lease_keys(claim, lease), &args)
            .await?
        {
            1 => return Ok(()),
            0 => "its TTL ended",
            _ => "another holder took it over after its TTL ended",
        };
        Err(LeaseError::lost(lease, reason))
    }

    async fn give_back(
        &self,
        claim: &Claim,
        lease: &Lease,
        mark_ms: u64,
    ) -> Result<(), LeaseError> {
        let args = [
            claim.holder.clone(),
            lease.worker.to_string(),
            mark::encode(mark_ms),
        ];
        let released: u8 = self
            .run(&SCRIPTS[2], &lease_keys(claim, lease), &args)
            .await?;
        if released == 0 {
            tracing::debug!(worker = lease.worker, "released a lease no longer held");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_without_connecting_and_never_show_a_password() {
        let registry = RedisRegistry::from_url("redis://u:pw@10.0.0.1:6380/3").unwrap();
        assert_eq!(
            format!("{registry:?}"),
            "RedisRegistry { url: \"redis://10.0.0.1:6380/3\", .. }"
        );
        assert_eq!(
            RedisRegistry::from_url("redis://h").unwrap().shown,
            "redis://h:6379/0"
        );
        let message = |url| RedisRegistry::from_url(url).unwrap_err().to_string();
        assert_eq!(
            message("redis://"),
            "lease URL \"redis://\": missing hostname; expected redis://HOST:PORT[/DB]"
        );
        assert_eq!(
            message("redis://:pw@h:x"),
            "lease URL \"redis://***@h:x\": redis URL did not parse; expected redis://HOST:PORT[/DB]"
        );
        assert_eq!(
            message("unix:///tmp/r.sock"),
            "lease URL \"unix:///tmp/r.sock\": expected redis://HOST:PORT[/DB]"
        );
    }

    #[test]
    fn keys_live_under_the_namespace_and_datacenter() {
        let claim = Claim::new("twitter-1", 2, 32, "web", Duration::from_secs(10));
        let lease = Lease {
            datacenter: 2,
            worker: 7,
            high_water_ms: None,
            token: 0,
        };
        assert_eq!(
            lease_keys(&claim, &lease),
            [
                "snowmint:twitter-1:dc2:w7",
                "snowmint:twitter-1:dc2:hwm",
                "snowmint:twitter-1:dc2:expiry"
            ]
        );
    }
}
