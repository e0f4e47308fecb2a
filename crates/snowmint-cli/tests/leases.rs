//! `snowmint serve --lease` against real Redis, etcd, PostgreSQL and ZooKeeper servers: the
//! registry going away under a running server, a SIGKILLed holder's worker id waiting out its
//! TTL, a successor on a new machine with its clock behind, and a fleet surviving a crashed
//! member and a registry restart. The same tests run against each. The `file` registry takes the
//! take-over test in `lease_file.rs`.

mod fleet;
mod support;

use snowmint_testkit::{Etcd, Postgres, Redis, ZooKeeper};

macro_rules! registry_tests {
    ($module:ident, $server:ident) => {
        mod $module {
            use super::*;

            #[test]
            fn a_server_stops_issuing_while_the_registry_is_away_and_resumes_after() {
                fleet::registry_away_and_back(&mut $server::start());
            }

            #[test]
            fn a_killed_holders_worker_goes_to_a_successor_only_after_its_ttl() {
                fleet::killed_holders_worker_waits_out_its_ttl(&mut $server::start());
            }

            #[test]
            fn a_successor_with_an_empty_state_dir_and_its_clock_behind_starts_after_the_dead() {
                fleet::successor_with_an_empty_state_dir_and_its_clock_behind(
                    &$server::start().url(),
                );
            }

            #[test]
            fn a_fleet_survives_a_killed_member_and_a_registry_restart() {
                fleet::fleet_survives_a_crash_and_a_registry_restart(&mut $server::start());
            }
        }
    };
}

registry_tests!(redis, Redis);
registry_tests!(etcd, Etcd);
registry_tests!(postgres, Postgres);
registry_tests!(zookeeper, ZooKeeper);
