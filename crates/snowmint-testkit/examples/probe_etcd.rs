fn main() {
    let pki = snowmint_testkit::Pki::new();
    let etcd = snowmint_testkit::Etcd::start_secured_with_token_ttl(
        &pki,
        std::time::Duration::from_secs(2),
    );
    println!("URL {}", etcd.url());
    println!("PORT {}", etcd.port());
    println!("CA {}", etcd.ca().display());
    let c = etcd.client();
    println!("CERT {} {}", c.cert.display(), c.key.display());
    println!(
        "PW {}",
        std::fs::read_to_string(etcd.password_file())
            .unwrap()
            .trim()
    );
    let other = pki.client("other");
    println!("OTHER {} {}", other.cert.display(), other.key.display());
    std::thread::sleep(std::time::Duration::from_secs(240));
}
