//! The `file` registry: worker ids shared by processes on one host through a directory of
//! locked files. It takes the conformance test that every shared registry must pass: a
//! successor on another state directory, with its clock behind, starts after the dead.

mod conformance;

conformance::takeover!({
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().join("registry").display());
    (dir, url)
});
