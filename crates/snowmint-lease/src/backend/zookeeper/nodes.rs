//! The nodes of a claim's datacenter, and how a node name carries an identity.

use std::fmt::Write;

use crate::registry::Claim;

/// The nodes of one claim's datacenter, below the registry's root.
#[derive(Debug, Clone)]
pub(super) struct Nodes {
    /// `{root}/{namespace}/dc{D}`: the workers and their marks are its children.
    pub(super) datacenter: String,
    /// `{datacenter}/sticky`: one child per identity.
    pub(super) sticky_dir: String,
    /// The claim identity's node in it.
    pub(super) sticky: String,
    /// `{root}/{namespace}/layout`: the fleet's layout in canonical form.
    pub(super) layout: String,
    /// `{root}/{namespace}/reach`: the largest reach (ms) of the fleet's servers.
    pub(super) reach: String,
    /// `{root}/{old}/dc{D}` for each namespace of an earlier release whose workers the
    /// claim respects and whose marks it inherits.
    pub(super) legacy: Vec<String>,
}

impl Nodes {
    pub(super) fn new(root: &str, claim: &Claim) -> Nodes {
        let datacenter_of =
            |namespace: &str| format!("{root}/{}/dc{}", node_name(namespace), claim.datacenter);
        let datacenter = datacenter_of(&claim.namespace);
        let sticky_dir = format!("{datacenter}/sticky");
        let sticky = format!("{sticky_dir}/{}", node_name(&claim.identity));
        Nodes {
            datacenter,
            sticky_dir,
            sticky,
            layout: format!("{root}/{}/layout", node_name(&claim.namespace)),
            reach: format!("{root}/{}/reach", node_name(&claim.namespace)),
            legacy: claim.legacy.iter().map(|old| datacenter_of(old)).collect(),
        }
    }

    /// The ephemeral node whose session holds `worker`.
    pub(super) fn worker(&self, worker: u64) -> String {
        format!("{}/w{worker}", self.datacenter)
    }

    /// The persistent node beside it that keeps the worker's high-water mark.
    pub(super) fn mark(&self, worker: u64) -> String {
        format!("{}/w{worker}.mark", self.datacenter)
    }
}

/// The worker a child of the datacenter names, if it is a worker node (not a mark, nor the
/// sticky folder) in canonical form.
pub(super) fn worker_of(child: &str) -> Option<u64> {
    let digits = child.strip_prefix('w')?;
    let worker: u64 = digits.parse().ok()?;
    (worker.to_string() == digits).then_some(worker)
}

/// `text` as one node name: `/`, `%`, and what ZooKeeper refuses in a name (control
/// characters, the private-use area, U+FFF0 and above, the names `.` and `..`) are
/// written `%XX` (UTF-8 bytes, in hex), so two different texts never share a name.
pub(super) fn node_name(text: &str) -> String {
    let mut name = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '/' || c == '%' || refused(c) {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(name, "%{byte:02X}");
            }
        } else {
            name.push(c);
        }
    }
    match name.as_str() {
        "" => "%".into(),
        "." => "%2E".into(),
        ".." => "%2E%2E".into(),
        _ => name,
    }
}

/// A character ZooKeeper refuses in a path.
fn refused(c: char) -> bool {
    c.is_control()
        || ('\u{e000}'..='\u{f8ff}').contains(&c)
        || ('\u{fff0}'..='\u{ffff}').contains(&c)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_claims_nodes_lie_below_the_root() {
        let claim = Claim::new(
            "twitter-1288834974657",
            3,
            32,
            "web-7",
            Duration::from_secs(2),
        );
        let nodes = Nodes::new("/snowmint", &claim);
        assert_eq!(nodes.datacenter, "/snowmint/twitter-1288834974657/dc3");
        assert_eq!(nodes.worker(12), "/snowmint/twitter-1288834974657/dc3/w12");
        assert_eq!(
            nodes.mark(12),
            "/snowmint/twitter-1288834974657/dc3/w12.mark"
        );
        assert_eq!(
            nodes.sticky,
            "/snowmint/twitter-1288834974657/dc3/sticky/web-7"
        );
    }

    #[test]
    fn only_canonical_worker_nodes_name_a_worker() {
        assert_eq!(worker_of("w12"), Some(12));
        assert_eq!(worker_of("w0"), Some(0));
        for other in ["w12.mark", "w012", "w", "sticky", "x12", "w-1"] {
            assert_eq!(worker_of(other), None, "{other}");
        }
    }

    #[test]
    fn any_identity_is_one_node_name_of_its_own() {
        assert_eq!(node_name("web-7.internal"), "web-7.internal");
        assert_eq!(node_name("a/b"), "a%2Fb");
        assert_eq!(node_name("a%2Fb"), "a%252Fb");
        assert_eq!(node_name("tab\there"), "tab%09here");
        assert_eq!(node_name("."), "%2E");
        assert_eq!(node_name(".."), "%2E%2E");
        assert_eq!(node_name(""), "%");
        assert_eq!(node_name("café"), "café");
        assert_eq!(node_name("\u{e000}"), "%EE%80%80");
    }
}
