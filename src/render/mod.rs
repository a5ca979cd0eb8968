//! Renderings of a diagnosis: plain text for email, Slack Block Kit, and the
//! Amazon Q Developer custom-notification JSON. All pure functions.

pub mod chat;
pub mod slack;
pub mod sparkline;
pub mod text;

use std::borrow::Cow;

/// Removes control characters (ANSI escapes, carriage returns, NULs) from text
/// that came from an alarm, and folds newlines and tabs into spaces for one-line fields.
/// Text without control characters (nearly all of it) is borrowed, not copied.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Cuts `text` to at most `max` characters, ending with a note when it had to.
pub fn truncate(text: &str, max: usize) -> String {
    const NOTE: &str = "… (truncated)";
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(NOTE.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(NOTE);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_an_alarm_are_dropped() {
        assert_eq!(one_line("a\u{1b}[31mred\u{7}\nnext"), "a[31mred next");
    }

    #[test]
    fn truncation_keeps_the_limit_and_says_so() {
        let cut = truncate(&"x".repeat(100), 20);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with("(truncated)"));
        assert_eq!(truncate("short", 20), "short");
    }
}
