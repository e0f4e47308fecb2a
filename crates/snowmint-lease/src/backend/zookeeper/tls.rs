//! TLS to ZooKeeper's secure client port, and why a session could not open.
//!
//! The client library reports a failed handshake only as a lost connection. When a
//! session cannot open, the registry makes a handshake of its own with the first server
//! of the URL, with the same files, and says which check failed; to a URL without TLS
//! that meets a server which closes the connection unanswered, it says that the port may
//! speak TLS only.

use std::time::Duration;

use tokio::net::TcpStream;
use zookeeper_client as zk;

use super::url::Target;
use crate::secured::TlsFiles;

/// The content type of a TLS alert record.
const TLS_ALERT: u8 = 0x15;
/// How long the diagnosing handshake may take: a server that answers does so in far less.
const PROBE_TIMEOUT: Duration = Duration::from_millis(750);

/// The client library's TLS options from the URL's files.
pub(super) fn options(files: &TlsFiles) -> Result<zk::TlsOptions, String> {
    let read = |parameter: &str, path: &std::path::Path| {
        crate::secured::read_small_text(path)
            .map_err(|e| format!("{parameter}={}: cannot read it: {e}", path.display()))
    };
    let ca = files
        .ca
        .as_deref()
        .ok_or("zookeepers:// needs tls_ca=FILE, the CA of the servers' certificates")?;
    // Checked as every backend checks them, for the same messages.
    files.client_config(&[])?;
    let mut options = zk::TlsOptions::new()
        .with_pem_ca(&read("tls_ca", ca)?)
        .map_err(|e| format!("tls_ca={}: {e}", ca.display()))?;
    if let (Some(cert), Some(key)) = (&files.cert, &files.key) {
        options = options
            .with_pem_identity(&read("tls_cert", cert)?, &read("tls_key", key)?)
            .map_err(|e| format!("tls_cert={}: {e}", cert.display()))?;
    }
    Ok(options)
}

/// Why no session opened, if TLS is the cause: `host:port: TLS refused: ...` for the
/// first server whose handshake fails, or, for a URL without TLS, the first server that
/// closes a plain-text connection unanswered.
pub(super) async fn diagnose(target: &Target) -> Option<String> {
    for host in target.hosts.split(',') {
        let said = match &target.tls {
            Some(files) => handshake(host, files).await,
            None => plain(host).await,
        };
        if said.is_some() {
            return said;
        }
    }
    None
}

async fn handshake(host: &str, files: &TlsFiles) -> Option<String> {
    let words = crate::refusal::handshake_refusal(host, files).await?;
    Some(format!("{host}: {words}"))
}

/// Whether a server closes a plain-text connection at once, as a TLS port does when it
/// reads a ZooKeeper handshake.
async fn plain(host: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let probe = async {
        let mut stream = TcpStream::connect(host).await.ok()?;
        // A four-letter command: a plain-text server answers it, allowed or not (and
        // opens no session for it); a TLS port reads no TLS record in its five bytes
        // and closes, or sends an alert.
        stream.write_all(b"srvr\n").await.ok()?;
        let mut answer = [0u8; 4];
        match stream.read(&mut answer).await {
            Ok(0) | Err(_) => Some(()),
            Ok(_) if answer[0] == TLS_ALERT => Some(()),
            Ok(_) => None,
        }
    };
    tokio::time::timeout(PROBE_TIMEOUT, probe).await.ok()??;
    Some(format!(
        "{host} closed the connection without an answer: plain text to a TLS port? (a secure client port needs zookeepers://)"
    ))
}
