//! An id and its parts in the one shape every interface shares: `snowmint parse --json`,
//! `GET /v1/decode/{id}` and the gRPC `Decode` answer.

use crate::{Id, Layout, RangeError, UnixMs};

/// An id taken apart, ready to serialize with exactly the keys `id` (decimal string),
/// `unix_ms`, `time` (RFC 3339 UTC with milliseconds), `datacenter`, `worker`, `sequence`.
///
/// # Examples
///
/// ```
/// use snowmint::{Decoded, Id, Layout};
///
/// let d = Decoded::new(&Layout::DISCORD, Id::from_u64(175928847299117063))?;
/// assert_eq!(d.time, "2016-04-30T11:18:25.796Z");
/// assert_eq!((d.datacenter, d.worker, d.sequence), (0, 1, 7));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "utoipa",
    schema(description = "An id taken apart: the keys of `snowmint parse --json`.")
)]
pub struct Decoded {
    /// The id (a decimal string in JSON).
    #[cfg_attr(feature = "utoipa", schema(value_type = String, example = "175928847299117063"))]
    pub id: Id,
    /// Its time, in ms since the Unix epoch.
    pub unix_ms: u64,
    /// Its time, RFC 3339 UTC with milliseconds and a `Z`; after 9999-12-31T23:59:59.999Z,
    /// which RFC 3339 cannot write, "N ms after the Unix epoch".
    pub time: String,
    /// The datacenter field.
    pub datacenter: u64,
    /// The worker field.
    pub worker: u64,
    /// The sequence field.
    pub sequence: u64,
}

impl Decoded {
    /// Decodes `id` with `layout`.
    ///
    /// # Errors
    ///
    /// The id sets bits the layout never uses.
    pub fn new(layout: &Layout, id: Id) -> Result<Decoded, RangeError> {
        let parts = layout.decode(id)?;
        Ok(Decoded {
            id,
            unix_ms: parts.unix_ms,
            time: UnixMs(parts.unix_ms).to_string(),
            datacenter: parts.datacenter,
            worker: parts.worker,
            sequence: parts.sequence,
        })
    }
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    #[test]
    fn json_has_exactly_the_documented_keys() {
        let d = Decoded::new(&Layout::DISCORD, Id::from_u64(175_928_847_299_117_063)).unwrap();
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"id":"175928847299117063","unix_ms":1462015105796,"time":"2016-04-30T11:18:25.796Z","datacenter":0,"worker":1,"sequence":7}"#
        );
    }
}
