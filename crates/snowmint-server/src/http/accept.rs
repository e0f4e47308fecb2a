//! Content negotiation for `/v1/id` and `/v1/ids`: JSON or plain text, by the q-values of
//! the client's `Accept` header (RFC 9110, section 12.5.1).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use std::convert::Infallible;

/// The answer a request's `Accept` headers prefer, read from the request's headers in
/// place (several header lines count as one list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accept(pub MediaType);

impl Accept {
    /// Whether the client prefers plain text to JSON.
    pub fn plain_text(self) -> bool {
        self.0 == MediaType::PlainText
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Accept {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Accept, Infallible> {
        Ok(Accept::of(&parts.headers))
    }
}

impl Accept {
    /// The answer `headers` prefer.
    pub fn of(headers: &HeaderMap) -> Accept {
        let mut lines = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok());
        // Most requests send none or one line: joined only when there are more.
        let answer = match (lines.next(), lines.next()) {
            (None, _) => negotiate(None),
            (Some(one), None) => negotiate(Some(one)),
            (Some(first), Some(second)) => {
                let mut all = vec![first, second];
                all.extend(lines);
                negotiate(Some(&all.join(",")))
            }
        };
        Accept(answer)
    }
}

/// What `/v1/id` and `/v1/ids` can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaType {
    /// `application/json`, the default.
    Json,
    /// `text/plain`, one id a line.
    PlainText,
}

/// One media range of an `Accept` header, with its weight in thousandths.
struct Range<'a> {
    kind: &'a str,
    subtype: &'a str,
    q: u16,
}

impl Range<'_> {
    /// How closely the range names `kind/subtype`: 3 exactly, 2 by `kind/*`, 1 by `*/*`,
    /// 0 not at all.
    fn specificity(&self, kind: &str, subtype: &str) -> u8 {
        let kind_matches = self.kind.eq_ignore_ascii_case(kind);
        match (self.kind, self.subtype) {
            ("*", "*") => 1,
            (_, "*") if kind_matches => 2,
            _ if kind_matches && self.subtype.eq_ignore_ascii_case(subtype) => 3,
            _ => 0,
        }
    }
}

/// Which answer the client prefers. Each answer gets the q-value of the most specific range
/// that names it (0 if none does); plain text must weigh more than JSON to win. Without a
/// header, or when neither is acceptable, the answer is JSON: RFC 9110 lets a server send
/// its default rather than 406. Ranges that do not parse (no `/`, a q-value outside 0 to
/// 1 or with more than three decimals) are skipped.
pub fn negotiate(accept: Option<&str>) -> MediaType {
    let Some(accept) = accept else {
        return MediaType::Json;
    };
    let ranges: Vec<Range<'_>> = accept.split(',').filter_map(range).collect();
    let weight = |kind: &str, subtype: &str| {
        let mut best: Option<(u8, u16)> = None;
        for r in &ranges {
            let specificity = r.specificity(kind, subtype);
            // The first of the most specific ranges decides.
            if specificity > 0 && best.is_none_or(|(s, _)| specificity > s) {
                best = Some((specificity, r.q));
            }
        }
        best.map_or(0, |(_, q)| q)
    };
    if weight("text", "plain") > weight("application", "json") {
        MediaType::PlainText
    } else {
        MediaType::Json
    }
}

fn range(text: &str) -> Option<Range<'_>> {
    let mut parts = text.split(';');
    let (kind, subtype) = parts.next()?.trim().split_once('/')?;
    let (kind, subtype) = (kind.trim(), subtype.trim());
    if kind.is_empty() || subtype.is_empty() || (kind == "*" && subtype != "*") {
        return None;
    }
    let mut q = 1000;
    for param in parts {
        if let Some((name, value)) = param.split_once('=')
            && name.trim().eq_ignore_ascii_case("q")
        {
            q = qvalue(value.trim())?;
        }
    }
    Some(Range { kind, subtype, q })
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
fn qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{fraction:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values_wildcards_and_specificity_decide() {
        use MediaType::{Json, PlainText};
        #[rustfmt::skip]
        let cases = [
            (None, Json),
            (Some(""), Json),
            (Some("text/plain"), PlainText),
            (Some("application/json"), Json),
            (Some("TEXT/Plain"), PlainText),
            (Some("text/plain; charset=utf-8"), PlainText),
            // Refused by q=0, whatever the order.
            (Some("text/plain;q=0, application/json"), Json),
            (Some("application/json, text/plain;q=0"), Json),
            (Some("application/json;q=0, */*"), PlainText),
            // Ordered by q, not by position.
            (Some("text/plain;q=0.5, application/json;q=0.9"), Json),
            (Some("application/json;q=0.5, text/plain;q=0.9"), PlainText),
            (Some("text/plain;Q=0.5, application/json;q=0.4"), PlainText),
            (Some("text/plain ; q = 0.5 , application/json;q=0.499"), PlainText),
            // A tie goes to JSON.
            (Some("text/plain, application/json"), Json),
            (Some("text/plain;q=0.7, application/json;q=0.700"), Json),
            // Wildcards weigh what they say, and a more specific range overrides them.
            (Some("*/*"), Json),
            (Some("text/*"), PlainText),
            (Some("text/*;q=0.8, */*;q=0.1"), PlainText),
            (Some("application/*;q=0.2, text/plain;q=0.3"), PlainText),
            (Some("text/*, text/plain;q=0"), Json),
            (Some("*/*;q=0.1, text/plain;q=0"), Json),
            (Some("*/*, application/json;q=0.2"), PlainText),
            // Neither acceptable: the default.
            (Some("text/html"), Json),
            (Some("text/plain;q=0, application/json;q=0"), Json),
            // Ranges that do not parse are skipped.
            (Some("text/plain;q=2"), Json),
            (Some("text/plain;q=abc, application/json;q=0.1"), Json),
            (Some("text/plain;q=0.1234"), Json),
            (Some("text/plain;q=1.001"), Json),
            (Some("textplain, text/plain;q=0.5, application/json;q=0.2"), PlainText),
            (Some("*/plain"), Json),
        ];
        for (accept, expected) in cases {
            assert_eq!(negotiate(accept), expected, "{accept:?}");
        }
    }

    #[test]
    fn q_values_parse_as_thousandths() {
        for (text, q) in [
            ("0", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.001", Some(1)),
            ("1", Some(1000)),
            ("1.000", Some(1000)),
            ("1.", Some(1000)),
            ("0.", Some(0)),
        ] {
            assert_eq!(qvalue(text), q, "{text}");
        }
        for text in ["", "2", "-0.5", "0.5000", "1.5", ".5", "0x1", "0.+5"] {
            assert_eq!(qvalue(text), None, "{text}");
        }
    }
}
