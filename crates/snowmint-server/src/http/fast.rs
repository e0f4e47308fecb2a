//! `GET /v1/id` in front of the router: the call made once per id, answered with the
//! same checks and metrics as through the router ([`Front::admit_then`]) and the same
//! handler body ([`ids::answer_one`]), without what routing costs per request (matching the
//! path, request extensions, the middleware's boxed futures, the extractors, the state's
//! clones). Every other request, `HEAD /v1/id` and `POST /v1/id` included, goes to the
//! router.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use axum::response::{IntoResponse, Response};
use tower::{Service, ServiceExt};

use super::accept::Accept;
use super::query::Params;
use super::routes::{DECLARED, Route};
use super::{Front, ids};
use crate::service::Caller;

/// The path the fast path answers.
const ONE: &str = "/v1/id";

/// The HTTP API as the server serves it: the router, with `GET /v1/id` answered in front
/// of it. A [`tower::Service`], so tests call it as they call the router.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(state: snowmint_server::AppState) {
/// use tower::ServiceExt;
/// let request = axum::http::Request::get("/v1/id").body(axum::body::Body::empty()).unwrap();
/// let response = snowmint_server::http_api(state).oneshot(request).await.unwrap();
/// assert!(response.status().is_success());
/// # }
/// ```
#[derive(Clone)]
pub struct HttpApi {
    router: Router,
    front: Front,
    /// `GET /v1/id`'s route, answered in front of the router; `None` on the admin port,
    /// which issues no ids.
    one: Option<&'static Route>,
}

impl std::fmt::Debug for HttpApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpApi").finish_non_exhaustive()
    }
}

impl HttpApi {
    pub(super) fn new(router: Router, front: Front) -> HttpApi {
        let one = DECLARED
            .route(ONE)
            .expect("/v1/id is declared in routes.rs");
        HttpApi {
            router,
            front,
            one: Some(one),
        }
    }

    /// The admin port's: every request goes to `router`.
    pub(super) fn admin(router: Router, front: Front) -> HttpApi {
        HttpApi {
            router,
            front,
            one: None,
        }
    }

    /// Answers `request`: in front of the router if it is `GET /v1/id`, else through it,
    /// with its `caller` (who it counts against in the budget of ids in flight) for the
    /// routes that issue batches. `GET /v1/id` issues one id and takes no room.
    pub(crate) async fn answer<B>(
        &self,
        mut request: Request<B>,
        caller: Option<Caller>,
    ) -> Response
    where
        B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        if let Some(route) = self.one
            && request.method() == Method::GET
            && request.uri().path() == ONE
        {
            // No route reads a body; without it the head can be shared across an await.
            let (head, _) = request.into_parts();
            return self.one(route, Request::from_parts(head, ())).await;
        }
        if let Some(caller) = caller {
            request.extensions_mut().insert(caller);
        }
        let Ok(response) = self.router.clone().oneshot(request).await;
        response
    }

    async fn one(&self, route: &'static Route, request: Request<()>) -> Response {
        let state = &self.front.0.app;
        self.front
            .admit_then(Some(route), request, |request| async move {
                match Params::parse(request.uri().query(), &route.query) {
                    Err(e) => e.into_response(),
                    Ok(params) => ids::answer_one(state, Accept::of(request.headers()), &params)
                        .await
                        .into_response(),
                }
            })
            .await
    }
}

impl<B> Service<Request<B>> for HttpApi
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let api = self.clone();
        Box::pin(async move { Ok(api.answer(request, None).await) })
    }
}
