//! A self-signed certificate for `localhost` and `127.0.0.1` and its key, for the TLS runs
//! of `scripts/bench-server`: `cert_pair DIR` writes `DIR/cert.pem` and `DIR/key.pem`.
//!
//! The key is rcgen's default, ECDSA P-256, as certificate authorities issue by default
//! today; the handshakes the benchmark makes are few (keep-alive), so the choice weighs
//! little on its figures.

use std::path::PathBuf;

fn main() {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: cert_pair DIR");
        std::process::exit(2);
    };
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let certified = rcgen::generate_simple_self_signed(names).unwrap_or_else(|e| {
        eprintln!("cert_pair: cannot make a certificate: {e}");
        std::process::exit(1);
    });
    for (file, pem) in [
        ("cert.pem", certified.cert.pem()),
        ("key.pem", certified.signing_key.serialize_pem()),
    ] {
        let path = dir.join(file);
        if let Err(e) = std::fs::write(&path, pem) {
            eprintln!("cert_pair: cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
    }
}
