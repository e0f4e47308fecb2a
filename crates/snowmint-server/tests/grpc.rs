//! The gRPC service over a real loopback socket, from a real tonic client.

use std::time::Duration;

use snowmint::{Id, Layout};
use snowmint_server::grpc::proto::id_service_client::IdServiceClient;
use snowmint_server::grpc::proto::{
    DecodeRequest, DecodeSerialRequest, NextBatchRequest, NextRequest, NextSerialsRequest,
    SerialFormat, StreamRequest,
};
use snowmint_server::{AppState, Config, IdSource, Settings, run};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Channel;

struct Running {
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Running {
    async fn client(&self) -> IdServiceClient<Channel> {
        IdServiceClient::connect(format!("http://{}", self.addr))
            .await
            .unwrap()
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("stopped within the grace period")
            .unwrap();
    }
}

async fn start(extra: &str) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "state_dir = {:?}\nworker = 9\nmax_batch = 50000\n{extra}",
        dir.path()
    );
    let config = Config::try_from(Settings::from_toml(&toml, "t.toml".as_ref()).unwrap()).unwrap();
    let state = AppState::new(
        IdSource::start(&config).await.unwrap(),
        config.max_batch,
        config.auth_token.clone(),
    );
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = grpc.local_addr().unwrap();
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        run(http, Some(grpc), state, Duration::from_secs(5), async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    Running {
        addr,
        stop: Some(tx),
        task,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_batch_stream_and_decode() {
    let server = start("").await;
    let mut client = server.client().await;
    let a = client.next(NextRequest {}).await.unwrap().into_inner().id;
    let b = client.next(NextRequest {}).await.unwrap().into_inner().id;
    assert!(b > a);
    assert_eq!(Layout::TWITTER.decode(Id::from_u64(b)).unwrap().worker, 9);

    let batch = client
        .next_batch(NextBatchRequest { count: 10_000 })
        .await
        .unwrap()
        .into_inner()
        .ids;
    assert_eq!(batch.len(), 10_000);
    assert!(batch[0] > b && batch.windows(2).all(|w| w[0] < w[1]));

    let mut stream = client
        .stream(StreamRequest {
            batch_size: 1000,
            total: 25_500,
        })
        .await
        .unwrap()
        .into_inner();
    let mut streamed = Vec::new();
    while let Some(message) = stream.message().await.unwrap() {
        streamed.extend(message.ids);
    }
    assert_eq!(streamed.len(), 25_500);
    assert!(streamed[0] > *batch.last().unwrap() && streamed.windows(2).all(|w| w[0] < w[1]));

    let d = client
        .decode(DecodeRequest {
            id: "175928847299117063".into(),
            layout: "discord".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (
            d.time.as_str(),
            d.unix_ms,
            d.worker,
            d.datacenter,
            d.sequence
        ),
        ("2016-04-30T11:18:25.796Z", 1_462_015_105_796, 1, 0, 7)
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_stops_when_the_client_does() {
    let server = start("").await;
    let mut client = server.client().await;
    let mut stream = client
        .stream(StreamRequest {
            batch_size: 0,
            total: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let mut got = 0;
    while got < 100_000 {
        got += stream.message().await.unwrap().unwrap().ids.len();
    }
    drop(stream);
    // The server notices, stops producing, and still serves.
    let id = client.next(NextRequest {}).await.unwrap().into_inner().id;
    assert!(id > 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_code_and_a_message() {
    let server = start("").await;
    let mut client = server.client().await;
    let err = client
        .next_batch(NextBatchRequest { count: 0 })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(err.message(), "count 0 is out of range 1..=50000");
    let err = client
        .next_batch(NextBatchRequest { count: 50_001 })
        .await
        .unwrap_err();
    assert_eq!(err.message(), "count 50001 is out of range 1..=50000");
    let err = client
        .stream(StreamRequest {
            batch_size: 60_000,
            total: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(err.message(), "batch_size 60000 is out of range 1..=50000");
    let err = client
        .decode(DecodeRequest {
            id: "hello".into(),
            layout: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        err.message(),
        "invalid character 'h' at position 0 in decimal id"
    );
    let err = client
        .decode(DecodeRequest {
            id: "1".into(),
            layout: "flickr".into(),
        })
        .await
        .unwrap_err();
    assert!(
        err.message().starts_with("unknown layout \"flickr\""),
        "{}",
        err.message()
    );
    assert!(client.next(NextRequest {}).await.is_ok());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_required_when_configured() {
    let server = start("auth_token = \"s3cret\"").await;
    let mut client = server.client().await;
    let err = client.next(NextRequest {}).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated);
    let mut request = tonic::Request::new(NextRequest {});
    request
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    assert!(client.next(request).await.is_ok());
    let mut request = tonic::Request::new(NextRequest {});
    request
        .metadata_mut()
        .insert("authorization", "Bearer nope".parse().unwrap());
    assert_eq!(
        client.next(request).await.unwrap_err().code(),
        tonic::Code::Unauthenticated
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serials_over_grpc() {
    let server = start("").await;
    let mut client = server.client().await;
    let format = SerialFormat {
        template: "{biz}-{time}-{node}-{seq}-{check}".into(),
        tz: "+08:00".into(),
    };
    let serials = client
        .next_serials(NextSerialsRequest {
            biz: "PAY".into(),
            count: 5,
            format: Some(format.clone()),
        })
        .await
        .unwrap()
        .into_inner()
        .serials;
    assert_eq!(serials.len(), 5);
    assert!(serials.windows(2).all(|w| w[0] < w[1]), "{serials:?}");
    let d = client
        .decode_serial(DecodeSerialRequest {
            serial: serials[4].clone(),
            format: Some(format),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.biz, "PAY");
    let parts = d.parts.unwrap();
    assert_eq!(parts.worker, 9);
    assert_eq!(
        Layout::TWITTER
            .decode(Id::from_u64(parts.id))
            .unwrap()
            .unix_ms,
        parts.unix_ms
    );
    let err = client
        .next_serials(NextSerialsRequest {
            biz: "pay".into(),
            count: 1,
            format: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().starts_with("business code \"pay\""),
        "{}",
        err.message()
    );
    let err = client
        .decode_serial(DecodeSerialRequest {
            serial: "PAY1".into(),
            format: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    server.stop().await;
}
