//! A layout by name, a preset or `custom:T/D/W/S`, then a tick length and an epoch, as
//! `serve --layout --tick-ms --epoch` and the CLI take them. Parsing never panics; a layout
//! that parses is found again under the name it gives back; what it decodes composes back
//! to the same id; errors are one line.

use arbitrary::Arbitrary;
use snowmint::{Id, Layout};

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    name: &'a str,
    tick_ms: Option<u64>,
    epoch_ms: Option<u64>,
    id: u64,
}

fn one_line(err: &dyn std::error::Error) {
    let message = err.to_string();
    assert!(!message.contains('\n'), "{message:?}");
}

/// Feeds the bytes, as a name, a tick, an epoch and an id, to `Layout::by_name`,
/// `with_tick_ms`, `with_epoch_ms` and `decode`.
pub fn check(data: &[u8]) {
    let Some(input) = crate::input::<Input>(data) else {
        return;
    };
    let mut layout = match Layout::by_name(input.name) {
        Ok(layout) => layout,
        Err(err) => return one_line(&err),
    };
    let name = if layout.name() == "custom" {
        let bits = layout.bits();
        format!(
            "custom:{}/{}/{}/{}",
            bits.timestamp, bits.datacenter, bits.worker, bits.sequence
        )
    } else {
        layout.name().to_string()
    };
    assert_eq!(Layout::by_name(&name), Ok(layout), "{name}");
    if let Some(tick_ms) = input.tick_ms {
        match layout.with_tick_ms(tick_ms) {
            Ok(ticked) => layout = ticked,
            Err(err) => return one_line(&err),
        }
    }
    if let Some(epoch_ms) = input.epoch_ms {
        match layout.with_epoch_ms(epoch_ms) {
            Ok(moved) => layout = moved,
            Err(err) => return one_line(&err),
        }
    }
    let id = Id::from_u64(input.id);
    match layout.decode(id) {
        Ok(parts) => {
            assert_eq!(layout.compose(parts.timestamp, parts.fields()), Ok(id));
            assert_eq!(layout.tick_at(parts.unix_ms), Ok(parts.timestamp));
        }
        Err(err) => one_line(&err),
    }
}
