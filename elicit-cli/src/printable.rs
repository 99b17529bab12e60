//! Text from a server, made safe to print on a terminal.
//!
//! A server chooses messages, titles, descriptions, option names, keys, tool descriptions, results
//! and error texts. Printed as they are, control characters in them would drive the user's
//! terminal: an escape sequence can conceal the URL shown for consent (`ESC [8m`), move the cursor
//! to paint a fake one over it, or retitle the window, and a bidirectional override can make a
//! host name read backwards. Every such character is shown as a visible `\u{..}` instead.
//!
//! Line breaks are the other way to mislead: a message whose second line reads `  host: bank.com`
//! would stand where the consent screen shows the real host. So names, keys and titles are shown
//! on one line ([`one_line`]: line breaks and tabs written out too), and every line of a longer
//! text is shown behind a margin no line of ours starts with ([`indented`]).

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` would act on the terminal or on the text's direction rather than show.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}'
        )
}

/// The margin every line of a server's longer text is shown behind.
pub(crate) const MARGIN: &str = "  | ";

/// `text` on one line: as [`printable`], and line breaks and tabs written out visibly too. For
/// server names, keys, titles and other short texts that stand inside a line of ours.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| acts(c) || c == '\n' || c == '\t') {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) || c == '\n' || c == '\t' {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// `text` made [`printable`], every line of it behind [`MARGIN`]: however it is broken, no line
/// of it can pass for one of ours.
pub(crate) fn indented(text: &str) -> String {
    let text = printable(text);
    let mut shown = String::with_capacity(text.len() + 8);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            shown.push('\n');
        }
        shown.push_str(MARGIN);
        shown.push_str(line);
    }
    shown
}

/// `text` with every control and bidirectional-formatting character written out visibly.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// `value` as JSON with every control and bidirectional-formatting character written as a JSON
/// `\uXXXX` escape: the same text once parsed, but nothing on the way acts on the terminal.
///
/// `serde_json` escapes only C0 controls; C1 controls (`U+009B` opens a CSI sequence on many
/// terminals) and bidi overrides pass through raw. All of them lie in the Basic Multilingual Plane
/// and can only stand inside strings, so one escape each keeps the output valid JSON.
pub(crate) fn printable_json(value: &serde_json::Value, pretty: bool) -> String {
    let text = if pretty { serde_json::to_string_pretty(value) } else { serde_json::to_string(value) };
    let text = text.unwrap_or_else(|_| value.to_string());
    if !text.chars().any(acts) {
        return text;
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            let _ = write!(shown, "\\u{:04x}", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    shown
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn neutralises_terminal_controls_and_bidi_overrides() {
        assert_eq!(printable("Pay \u{1b}[8mhidden\u{7}"), "Pay \\u{1b}[8mhidden\\u{7}");
        assert_eq!(printable("moc.elgoog\u{202E}"), "moc.elgoog\\u{202e}");
        assert_eq!(printable("a\rb\u{9b}c"), "a\\u{d}b\\u{9b}c");
        assert!(matches!(printable("two\nlines\tand € → ok"), Cow::Borrowed(_)));
    }

    #[test]
    fn names_stay_on_one_line_and_every_line_of_a_message_is_indented() {
        assert_eq!(one_line("shop\n  host: bank.example\tx"), "shop\\u{a}  host: bank.example\\u{9}x");
        assert_eq!(one_line("a\u{2028}b\u{1b}"), "a\\u{2028}b\\u{1b}");
        assert!(matches!(one_line("travel-server"), Cow::Borrowed(_)));
        let shown = indented("Pay here.\n  host: bank.example\n\u{1b}[2Ahost: x");
        assert_eq!(shown, "  | Pay here.\n  |   host: bank.example\n  | \\u{1b}[2Ahost: x");
        assert!(shown.lines().all(|line| line.starts_with(MARGIN)), "{shown}");
    }

    #[test]
    fn json_keeps_its_meaning_without_terminal_controls() {
        let value = serde_json::json!({"t\u{9b}": ["\u{1b}[8m\u{202e}x\u{9b}31m", "a\nb"]});
        for pretty in [false, true] {
            let text = printable_json(&value, pretty);
            assert!(!text.chars().any(acts), "{text:?}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
        }
        assert!(printable_json(&value, false).contains("\\u009b31m"));
    }
}
