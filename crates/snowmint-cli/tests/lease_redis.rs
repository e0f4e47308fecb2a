//! `snowmint serve --lease redis://...` against a real Redis: the registry going away under
//! a running server, and a fleet surviving a crashed member and a registry restart.

mod fleet;
mod support;

struct Redis(snowmint_testkit::Redis);

impl fleet::Registry for Redis {
    fn url(&self) -> String {
        self.0.url()
    }

    fn stop(&mut self) {
        self.0.stop();
    }

    fn restart(&mut self) {
        self.0.restart();
    }
}

#[test]
fn a_server_stops_issuing_while_redis_is_away_and_resumes_after() {
    fleet::registry_away_and_back(&mut Redis(snowmint_testkit::Redis::start()));
}

#[test]
fn a_fleet_on_redis_survives_a_killed_member_and_a_redis_restart() {
    fleet::fleet_survives_a_crash_and_a_registry_restart(&mut Redis(
        snowmint_testkit::Redis::start(),
    ));
}

#[test]
fn a_killed_holders_worker_goes_to_a_successor_only_after_its_ttl() {
    fleet::killed_holders_worker_waits_out_its_ttl(&mut Redis(snowmint_testkit::Redis::start()));
}
