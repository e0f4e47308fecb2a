//! A server's state for tests that drive it without a socket: datacenter 2, worker 5, a
//! state directory of its own, and `extra` TOML keys.

use snowmint_server::{AppState, Config, IdSource, Settings};

pub struct Server {
    pub state: AppState,
    _dir: tempfile::TempDir,
}

pub async fn server(extra: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "state_dir = {:?}\ndatacenter = 2\nworker = 5\n{extra}",
        dir.path()
    );
    let config =
        Config::try_from(Settings::from_toml(&toml, "test.toml".as_ref()).unwrap()).unwrap();
    let source = IdSource::start(&config).await.unwrap();
    Server {
        state: AppState::for_config(source, &config),
        _dir: dir,
    }
}
