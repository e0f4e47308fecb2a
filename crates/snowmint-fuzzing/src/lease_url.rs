//! A `--lease` URL: picking a registry from it never panics and never connects anywhere
//! (network backends connect at their first acquisition); an accepted URL gives the
//! backend its scheme names; a refused one is an error of one line that quotes the URL
//! (with any credentials masked), or for `hostname` the host name at fault.

/// Each scheme, and the backend it picks.
const SCHEMES: [(&str, &str); 12] = [
    ("static:", "static"),
    ("file:", "file"),
    ("redis://", "redis"),
    ("rediss://", "redis"),
    ("redis+sentinel://", "redis"),
    ("rediss+sentinel://", "redis"),
    ("etcd://", "etcd"),
    ("etcds://", "etcd"),
    ("postgres://", "postgres"),
    ("postgresql://", "postgres"),
    ("zookeeper://", "zookeeper"),
    ("zookeepers://", "zookeeper"),
];

/// Feeds the bytes, as text, to `snowmint_lease::registry_from_url`.
pub fn check(data: &[u8]) {
    let Some(url) = crate::input::<&str>(data) else {
        return;
    };
    match snowmint_lease::registry_from_url(url) {
        Ok(registry) => {
            if let Some((_, backend)) = SCHEMES.iter().find(|(s, _)| url.starts_with(s)) {
                assert_eq!(registry.backend(), *backend, "{url:?}");
            } else {
                assert_eq!(url, "hostname");
            }
        }
        Err(err) => {
            let message = err.to_string();
            assert!(!message.contains('\n'), "{message:?}");
            let quoted = format!("{url:?}");
            // `hostname` takes the worker id from the machine's name: an error names that.
            let named = if url == "hostname" {
                message.starts_with("host name ")
            } else {
                message.contains(&quoted) || message.contains("***")
            };
            assert!(named, "{message:?} does not name {quoted}");
        }
    }
}
