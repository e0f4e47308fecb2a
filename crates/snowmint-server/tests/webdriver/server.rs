//! The real server, started in-process on a loopback port for a browser to visit.

use std::time::Duration;

use snowmint_server::{AppState, Config, IdSource, Listeners, Settings, run};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The server, serving on a loopback port until [`Server::stop`] or the end of the test.
pub struct Server {
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts the real server with datacenter 3, worker 17 and `extra` TOML.
    pub async fn start(extra: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let toml = format!(
            "state_dir = {:?}\ndatacenter = 3\nworker = 17\n{extra}",
            dir.path()
        );
        let config =
            Config::try_from(Settings::from_toml(&toml, "browser.toml".as_ref()).unwrap()).unwrap();
        let state = AppState::for_config(IdSource::start(&config).await.unwrap(), &config);
        let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", http.local_addr().unwrap());
        let (tx, rx) = oneshot::channel();
        let task = tokio::spawn(async move {
            let listeners = Listeners {
                tls: None,
                http,
                grpc: None,
                thrift: None,
                admin: None,
            };
            run(listeners, state, Duration::from_secs(5), async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        Server {
            url,
            stop: Some(tx),
            task,
            _dir: dir,
        }
    }

    /// Stops the server and waits for it to persist its mark.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("server stopped within its grace period")
            .unwrap();
    }
}
