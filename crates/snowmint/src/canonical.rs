//! A layout in canonical form: what decides which ids it can issue, and nothing else.
//!
//! Two layouts whose canonical forms are equal issue the same id for the same instant,
//! datacenter, worker and sequence, whatever they are called: `twitter` and
//! `custom:41/5/5/12` are one layout. Two layouts whose forms differ in anything (a field's
//! position or width, the tick, the epoch) may still issue the same ids from different
//! inputs, so generators that share worker ids must agree on it: a registry records its
//! fleet's form and refuses a server whose form differs.

use std::fmt;

use crate::{Field, Layout};

/// [`Layout::canonical`]: the fields' positions and widths, low bit first with their
/// widths (`name@shift:width`, fields of width 0 left out, since they hold nothing), then
/// the tick and the epoch. The layout's name and what a scheme calls its fields are not in
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Canonical<'a>(&'a Layout);

impl Layout {
    /// The layout in canonical form, for telling whether two layouts are the same one.
    ///
    /// # Examples
    ///
    /// ```
    /// use snowmint::{Bits, Layout};
    ///
    /// let spelled = Layout::new(Bits { timestamp: 41, datacenter: 5, worker: 5, sequence: 12 }, 1, 1288834974657)?;
    /// assert_eq!(spelled.canonical().to_string(), Layout::TWITTER.canonical().to_string());
    /// assert_eq!(
    ///     Layout::TWITTER.canonical().to_string(),
    ///     "timestamp@22:41,datacenter@17:5,worker@12:5,sequence@0:12;tick=1ms;epoch=1288834974657"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn canonical(&self) -> Canonical<'_> {
        Canonical(self)
    }
}

impl fmt::Display for Canonical<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layout = self.0;
        let bits = layout.bits();
        // The low fields, most significant first, sit below the timestamp: their shifts
        // are the widths of the fields after them.
        let mut shift = 0u32;
        let mut low = Vec::with_capacity(3);
        for field in layout.order().into_iter().rev() {
            let width = bits.of(field);
            low.push((field, shift, width));
            shift += u32::from(width);
        }
        write!(f, "timestamp@{shift}:{}", bits.timestamp)?;
        for (field, shift, width) in low.into_iter().rev() {
            if width > 0 {
                write!(f, ",{}@{shift}:{width}", Field::key(field))?;
            }
        }
        write!(
            f,
            ";tick={}ms;epoch={}",
            layout.tick_ms(),
            layout.epoch_ms()
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::{Bits, Field, Layout};

    fn custom(timestamp: u8, datacenter: u8, worker: u8, sequence: u8) -> Layout {
        let bits = Bits {
            timestamp,
            datacenter,
            worker,
            sequence,
        };
        Layout::new_u64(bits, 1, Layout::TWITTER.epoch_ms()).unwrap()
    }

    fn form(layout: &Layout) -> String {
        layout.canonical().to_string()
    }

    #[test]
    fn one_layout_spelled_two_ways_has_one_form() {
        assert_eq!(form(&custom(41, 5, 5, 12)), form(&Layout::TWITTER));
        // A field of width 0 holds nothing, wherever it is put.
        let a = custom(41, 0, 10, 12);
        let b = a.with_order([Field::Worker, Field::Datacenter, Field::Sequence]);
        assert_eq!(form(&a), form(&b.unwrap()));
        assert_eq!(
            form(&a),
            "timestamp@22:41,worker@12:10,sequence@0:12;tick=1ms;epoch=1288834974657"
        );
    }

    #[test]
    fn layouts_that_differ_in_anything_have_other_forms() {
        let twitter = form(&Layout::TWITTER);
        let others = [
            custom(41, 5, 4, 13),
            custom(42, 5, 5, 12),
            Layout::TWITTER.with_epoch_ms(1_288_834_974_658).unwrap(),
            Layout::TWITTER.with_tick_ms(10).unwrap(),
            Layout::TWITTER
                .with_order([Field::Worker, Field::Datacenter, Field::Sequence])
                .unwrap(),
        ];
        for other in others {
            assert_ne!(form(&other), twitter, "{other:?}");
        }
        let presets: std::collections::HashSet<String> = Layout::PRESETS.iter().map(form).collect();
        assert_eq!(presets.len(), Layout::PRESETS.len());
        assert_eq!(
            form(&Layout::SONYFLAKE),
            "timestamp@24:39,sequence@16:8,worker@0:16;tick=10ms;epoch=1409529600000"
        );
    }
}
