//! Renderings of a diagnosis: plain text for email, Slack Block Kit, and the
//! Amazon Q Developer custom-notification JSON. All pure functions.

pub mod brief;
pub mod chat;
pub mod slack;
pub mod sparkline;
pub mod text;

use std::borrow::Cow;

/// Removes control characters (ANSI escapes, carriage returns, NULs) and
/// bidirectional overrides from text that came from an alarm, and folds line
/// breaks (including Unicode's line and paragraph separators) and tabs into
/// spaces, so no field can start a line of its own in an email or a chat.
/// Text without such characters (nearly all of it) is borrowed, not copied.
/// Log patterns the details show (the JSON keeps more).
pub const LOG_PATTERNS_SHOWN: usize = 5;

pub fn one_line(text: &str) -> Cow<'_, str> {
    // Printable ASCII (nearly every field) is checked a byte at a time; only
    // text with other bytes is decoded into characters.
    let printable_ascii = text.bytes().all(|b| (0x20..0x7f).contains(&b));
    if printable_ascii
        || !text
            .chars()
            .any(|c| c.is_control() || is_line_break(c) || is_bidi_control(c))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push(' '),
            c if is_line_break(c) => out.push(' '),
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Characters some mail and chat clients start a new line at.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Embeddings, overrides and isolates: they reorder what follows them on screen.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
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

/// The headline starts with a capital, as a sentence does.
pub(crate) fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The one quiet line for a held diagnosis whose alarm cleared during the hold.
pub fn quiet_line(d: &crate::diagnosis::Diagnosis, hold: &crate::diagnosis::hold::Hold) -> String {
    format!(
        "{} cleared within the {}-minute hold ({}; {}): not paged",
        one_line(&d.alarm.name),
        hold.minutes(),
        d.classification.behaviour.as_str(),
        d.severity.as_str(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_an_alarm_are_dropped() {
        assert_eq!(one_line("a\u{1b}[31mred\u{7}\nnext"), "a[31mred next");
    }

    #[test]
    fn unicode_line_separators_and_bidi_overrides_cannot_shape_a_line() {
        assert_eq!(
            one_line("ok\u{2028}VERDICT: all clear\u{202e}gnp.exe"),
            "ok VERDICT: all cleargnp.exe"
        );
    }

    #[test]
    fn truncation_keeps_the_limit_and_says_so() {
        let cut = truncate(&"x".repeat(100), 20);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with("(truncated)"));
        assert_eq!(truncate("short", 20), "short");
    }

    #[test]
    fn the_quiet_line_names_the_alarm_and_the_hold_in_minutes() {
        let mut d = crate::fixtures::sample();
        d.classification.behaviour = crate::classify::Behaviour::Transient;
        let hold = crate::diagnosis::hold::Hold {
            seconds: 270,
            outcome: crate::diagnosis::hold::HoldOutcome::Cleared { since: None },
        };
        let line = quiet_line(&d, &hold);
        assert!(line.starts_with(&d.alarm.name), "{line}");
        assert!(line.contains("5-minute hold"), "{line}");
        assert!(line.ends_with("not paged"), "{line}");
    }
}
