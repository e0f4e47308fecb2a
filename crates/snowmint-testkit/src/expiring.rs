//! A secured registry whose certificate expires: for tests of a lease held while the
//! registry's certificate runs out, written once for every registry that serves one.

use std::path::Path;

use crate::Server;
use crate::pki::Pair;

/// A secured registry that can be made to present another server certificate after its
/// next restart.
pub trait ServesCertificate: Server {
    /// Puts `pair` in place of the server certificate; the registry presents it after a
    /// restart.
    fn use_server_certificate(&self, pair: &Pair);

    /// Returns once the restarted registry completes TLS handshakes with its valid
    /// certificate, for one whose first handshake is slow (a JVM's): a test's next
    /// connection then meets the registry, not its warming up. The default returns at once.
    fn await_handshakes(&self) {}
}

/// A registry whose [`Server::stop`] is a restart with an expired certificate, and whose
/// [`Server::restart`] brings the valid one back: to a client it is down, though its
/// process runs, until then.
#[derive(Debug)]
pub struct ExpiringCertificate<S> {
    /// The registry.
    pub server: S,
    /// The certificate a restart brings back.
    pub valid: Pair,
    /// The certificate a stop puts in place.
    pub expired: Pair,
}

impl<S: ServesCertificate> Server for ExpiringCertificate<S> {
    fn url(&self) -> String {
        self.server.url()
    }
    fn dir(&self) -> &Path {
        self.server.dir()
    }
    fn pid(&self) -> Option<u32> {
        self.server.pid()
    }
    fn stop(&mut self) {
        self.server.use_server_certificate(&self.expired);
        self.server.restart();
    }
    fn restart(&mut self) {
        self.server.use_server_certificate(&self.valid);
        self.server.restart();
        self.server.await_handshakes();
    }
    fn kill(&mut self) {
        self.server.kill();
    }
}
