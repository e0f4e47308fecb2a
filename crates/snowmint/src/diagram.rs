//! A layout drawn as a row of bits, for people.

use core::fmt;

use crate::layout::Layout;

/// A layout drawn as a row of bits, from bit 63 on the left to bit 0 on the right, with each
/// field's bit range above it and its width below. The default layout:
///
/// ```text
///   63     62     22  21      17  16  12  11     0
/// +-------+-----------+------------+--------+----------+
/// | 0     | timestamp | datacenter | worker | sequence |
/// +-------+-----------+------------+--------+----------+
///   1 bit   41 bits     5 bits       5 bits   12 bits
/// ```
///
/// # Examples
///
/// ```
/// use snowmint::Layout;
///
/// let drawn = Layout::TWITTER.diagram().to_string();
/// assert_eq!(drawn.lines().nth(2), Some("| 0     | timestamp | datacenter | worker | sequence |"));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Diagram<'a>(pub(crate) &'a Layout);

impl Diagram<'_> {
    /// The segments from the top bit down: (label, width in bits).
    fn segments(&self) -> Vec<(&'static str, u8)> {
        let layout = self.0;
        let mut segments = Vec::with_capacity(5);
        let spare = 64 - layout.bits().total();
        if spare > 0 {
            segments.push(("0", spare as u8));
        }
        segments.push(("timestamp", layout.bits().timestamp));
        for field in layout.order() {
            let (name, bits) = (layout.names().of(field), layout.bits().of(field));
            if bits > 0 {
                segments.push((name, bits));
            }
        }
        segments
    }
}

impl fmt::Display for Diagram<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A cell: its label, its bit range (high on the left), its width text, and how wide
        // it is drawn: the longest of the three, with a space either side.
        let mut cells = Vec::new();
        let mut hi = 63u32;
        for (label, bits) in self.segments() {
            let lo = hi + 1 - u32::from(bits);
            let (hi_text, lo_text) = if hi == lo {
                (hi.to_string(), String::new())
            } else {
                (hi.to_string(), lo.to_string())
            };
            let bits_text = if bits == 1 {
                "1 bit".to_string()
            } else {
                format!("{bits} bits")
            };
            let range_len = hi_text.len() + 1 + lo_text.len();
            let width = label.len().max(range_len).max(bits_text.len()) + 2;
            cells.push((label, hi_text, lo_text, bits_text, width));
            hi = lo.saturating_sub(1);
        }
        let mut ranges = String::new();
        let mut border = String::new();
        let mut labels = String::new();
        let mut widths = String::new();
        for (label, hi_text, lo_text, bits_text, width) in &cells {
            let gap = width - 2 - hi_text.len();
            ranges.push_str(&format!("  {hi_text}{lo_text:>gap$}"));
            border.push_str(&format!("+{}", "-".repeat(*width)));
            labels.push_str(&format!("| {label:<w$}", w = width - 1));
            widths.push_str(&format!("  {bits_text:<w$}", w = width - 1));
        }
        writeln!(f, "{}", ranges.trim_end())?;
        writeln!(f, "{border}+")?;
        writeln!(f, "{labels}|")?;
        writeln!(f, "{border}+")?;
        write!(f, "{}", widths.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use crate::Layout;

    #[test]
    fn diagram_of_the_default_layout() {
        let expected = [
            "  63     62     22  21      17  16  12  11     0",
            "+-------+-----------+------------+--------+----------+",
            "| 0     | timestamp | datacenter | worker | sequence |",
            "+-------+-----------+------------+--------+----------+",
            "  1 bit   41 bits     5 bits       5 bits   12 bits",
        ]
        .join("\n");
        assert_eq!(Layout::TWITTER.diagram().to_string(), expected);
    }
}
