//! A whole server (HTTP and gRPC) on loopback ports, run in the test's process, and a
//! client that sends gRPC message bytes as they are: for the gRPC tests.

#![allow(dead_code)] // each test file uses what it needs

use std::time::Duration;

use snowmint_proto::v1::id_service_client::IdServiceClient;
use snowmint_server::{AppState, Config, IdSource, Listeners, Settings, run};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Channel;

/// A running server: worker 9, `max_batch` 50,000, a state directory of its own.
pub struct Running {
    pub addr: std::net::SocketAddr,
    pub http: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Running {
    pub async fn client(&self) -> IdServiceClient<Channel> {
        IdServiceClient::connect(format!("http://{}", self.addr))
            .await
            .unwrap()
    }

    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("stopped within the grace period")
            .unwrap();
    }
}

/// Starts a server with `extra` TOML keys.
pub async fn start(extra: &str) -> Running {
    start_with_batch(50_000, extra).await
}

/// Starts a server whose largest batch is `max_batch`, with `extra` TOML keys.
pub async fn start_with_batch(max_batch: u64, extra: &str) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "state_dir = {:?}\nworker = 9\nmax_batch = {max_batch}\n{extra}",
        dir.path()
    );
    let config = Config::try_from(Settings::from_toml(&toml, "t.toml".as_ref()).unwrap()).unwrap();
    let state = AppState::for_config(IdSource::start(&config).await.unwrap(), &config);
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = grpc.local_addr().unwrap();
    let http_addr = http.local_addr().unwrap();
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        let listeners = Listeners {
            tls: None,
            http,
            grpc: Some(grpc),
            thrift: None,
            admin: None,
        };
        run(listeners, state, Duration::from_secs(5), async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    Running {
        addr,
        http: http_addr,
        stop: Some(tx),
        task,
        _dir: dir,
    }
}

/// Sends and receives message bytes as they are, to speak protobuf badly or the old way.
#[derive(Debug, Clone, Default)]
pub struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: Vec<u8>,
        buf: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        prost::bytes::BufMut::put_slice(buf, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        buf: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        use prost::bytes::Buf;
        Ok(Some(buf.copy_to_bytes(buf.remaining()).to_vec()))
    }
}

/// A client of `server` that sends messages as given bytes, ready for a call.
async fn raw_client(server: &Running) -> tonic::client::Grpc<Channel> {
    let channel = Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    grpc
}

/// One unary call of `method` with `body` as the message's bytes.
pub async fn raw_call(
    server: &Running,
    method: &str,
    body: Vec<u8>,
) -> Result<Vec<u8>, tonic::Status> {
    let mut grpc = raw_client(server).await;
    let path = format!("/snowmint.v1.IdService/{method}").parse().unwrap();
    grpc.unary(tonic::Request::new(body), path, RawCodec)
        .await
        .map(tonic::Response::into_inner)
}

/// One call of the server-streaming `Stream` with `body` as the request message's bytes:
/// the first `messages` messages of the answer at most, then the client leaves.
pub async fn raw_stream(
    server: &Running,
    body: Vec<u8>,
    messages: usize,
) -> Result<Vec<Vec<u8>>, tonic::Status> {
    let mut grpc = raw_client(server).await;
    let path = "/snowmint.v1.IdService/Stream".parse().unwrap();
    let mut stream = grpc
        .server_streaming(tonic::Request::new(body), path, RawCodec)
        .await?
        .into_inner();
    let mut received = Vec::new();
    while received.len() < messages {
        match stream.message().await? {
            Some(message) => received.push(message),
            None => break,
        }
    }
    Ok(received)
}
