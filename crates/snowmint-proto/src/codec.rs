//! The server's protobuf codec: prost's, except that a request that does not decode is the
//! client's mistake (`INVALID_ARGUMENT`), where prost's codec reports `INTERNAL`, which says
//! the server failed. The generated client keeps prost's codec: a response that does not
//! decode is not the client's argument.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::ProstEncoder;

/// Encodes responses `T` as prost does and decodes requests `U`, refusing malformed ones
/// as `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct RequestCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for RequestCodec<T, U> {
    fn default() -> Self {
        RequestCodec(PhantomData)
    }
}

impl<T, U> Codec for RequestCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> ProstEncoder<T> {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> RequestDecoder<U> {
        RequestDecoder(PhantomData)
    }
}

/// Decodes one request message.
#[derive(Debug, Clone)]
pub struct RequestDecoder<U>(PhantomData<U>);

impl<U: Message + Default> Decoder for RequestDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf)
            .map(Some)
            .map_err(|e| Status::invalid_argument(format!("malformed request: {e}")))
    }
}
