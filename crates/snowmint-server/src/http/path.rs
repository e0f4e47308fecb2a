//! A path parameter as text, refused with the server's JSON error: axum's own `Path`
//! rejection is plain text.

use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;

use crate::ApiError;

/// The one parameter of a route such as `/v1/decode/{id}`, percent-decoded.
#[derive(Debug)]
pub struct PathText(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathText {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<PathText, ApiError> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(text)) => Ok(PathText(text)),
            Err(rejection) => Err(refusal(parts.uri.path(), &rejection)),
        }
    }
}

fn refusal(path: &str, rejection: &PathRejection) -> ApiError {
    use axum::extract::path::ErrorKind;
    if let PathRejection::FailedToDeserializePathParams(err) = rejection
        && let ErrorKind::InvalidUtf8InPathParam { key } = err.kind()
    {
        return ApiError::BadRequest(format!(
            "path parameter {key} of {path} is not UTF-8 text once percent-decoded"
        ));
    }
    ApiError::BadRequest(format!(
        "path {path} cannot be read: {}",
        rejection.body_text().to_lowercase()
    ))
}
