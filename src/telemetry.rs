//! Logging set-up: JSON lines in Lambda (CloudWatch Logs Insights reads the
//! fields), compact text on a terminal. The level comes from `RUST_LOG` when
//! set (full filter syntax), else from `AWS_LAMBDA_LOG_LEVEL` (what the
//! function's `LoggingConfig.ApplicationLogLevel`, the template's `LogLevel`,
//! sets), else the default. Colour codes only when stderr is a terminal.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Where the logs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

/// Installs the global subscriber; logs go to stderr so stdout stays the report.
pub fn init(format: LogFormat) {
    init_with_default(format, "info");
}

/// As [`init`], with another level when neither variable is set.
pub fn init_with_default(format: LogFormat, default_level: &str) {
    let directive = filter_directive(
        std::env::var("RUST_LOG").ok().as_deref(),
        std::env::var("AWS_LAMBDA_LOG_LEVEL").ok().as_deref(),
        default_level,
    );
    let filter = EnvFilter::try_new(&directive).unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .without_time()
            .try_init(),
        LogFormat::Text => builder.compact().with_target(false).try_init(),
    };
}

/// The filter to install: `RUST_LOG` first, then Lambda's level (its names
/// mapped onto tracing's: `FATAL` is `error`), then the default.
pub fn filter_directive(
    rust_log: Option<&str>,
    lambda_level: Option<&str>,
    default_level: &str,
) -> String {
    if let Some(filter) = rust_log.map(str::trim).filter(|f| !f.is_empty()) {
        return filter.to_owned();
    }
    let lambda = lambda_level.map(|l| l.trim().to_ascii_uppercase());
    match lambda.as_deref() {
        Some("TRACE") => "trace",
        Some("DEBUG") => "debug",
        Some("INFO") => "info",
        Some("WARN") => "warn",
        Some("ERROR") | Some("FATAL") => "error",
        _ => default_level,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::filter_directive;

    #[test]
    fn lambdas_log_level_switches_debug_on() {
        assert_eq!(filter_directive(None, Some("DEBUG"), "info"), "debug");
        assert_eq!(filter_directive(None, Some("fatal"), "info"), "error");
        assert_eq!(filter_directive(None, Some("WARN"), "info"), "warn");
    }

    #[test]
    fn rust_log_wins_and_an_unknown_level_keeps_the_default() {
        assert_eq!(
            filter_directive(Some("alarm_triage=trace"), Some("ERROR"), "info"),
            "alarm_triage=trace"
        );
        assert_eq!(filter_directive(Some(" "), Some("LOUD"), "info"), "info");
        assert_eq!(filter_directive(None, None, "warn"), "warn");
    }
}
