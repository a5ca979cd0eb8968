//! Logging set-up: JSON lines in Lambda (CloudWatch Logs Insights reads the
//! fields), compact text on a terminal. Level from `RUST_LOG` (default info).

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

/// As [`init`], with another level when `RUST_LOG` is not set.
pub fn init_with_default(format: LogFormat, default_level: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
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
