//! A container's log through the API server's `pods/log`: read-only, bounded
//! by `limitBytes`, timestamped so that lines can be counted before and since
//! the onset, and redacted before anything else sees them.

use chrono::SecondsFormat;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::KubeSource;
use super::connection::Cluster;
use crate::error::{Error, Result};
use crate::evidence::logs::{
    ContainerLog, LogOrigin, LogRead, LogRequest, LogWindow, ReadSpec, parse_timestamped,
};
use crate::evidence::source;
use crate::evidence::workload::PodsListed;

impl KubeSource {
    /// One container's log: one read from each of the window's starts, at
    /// once, merged. A previous instance the kubelet no longer keeps, or a
    /// container still waiting to start, reads as empty rather than failing.
    pub async fn container_log(
        &self,
        pods: &PodsListed,
        request: &LogRequest,
        window: LogWindow,
        limit_bytes: usize,
    ) -> Result<ContainerLog> {
        let cluster = self
            .connect(pods.cluster.as_deref())
            .await
            .map_err(as_log_gap)?;
        let reads = window
            .reads(limit_bytes)
            .into_iter()
            .map(|spec| read(&cluster, &pods.namespace, request, spec));
        let reads = futures_util::future::try_join_all(reads).await?;
        Ok(ContainerLog::from_reads(
            request,
            LogOrigin::PodLog,
            reads.into_iter().flatten().collect(),
            window.now,
        )
        .clipped_to_creation(pods.created.get(&request.pod).copied()))
    }
}

/// `GET /api/v1/namespaces/{ns}/pods/{pod}/log` from `since`.
async fn read(
    cluster: &Cluster,
    namespace: &str,
    request: &LogRequest,
    spec: ReadSpec,
) -> Result<Option<LogRead>> {
    let path = log_path(namespace, request, spec);
    let http = http::Request::get(&path)
        .body(Vec::new())
        .map_err(|e| log_gap(format!("cannot build the request {path}: {e}"), false))?;
    let what = format!(
        "the log of {}/{} container {}{}",
        namespace,
        request.pod,
        request.container,
        if request.previous {
            " (previous instance)"
        } else {
            ""
        }
    );
    let body = match cluster.client.request_text(http).await {
        Ok(body) => body,
        // 400: "previous terminated container not found", "container is
        // waiting to start": the container has no log to give, nothing failed,
        // and no minute of it was read.
        Err(kube::Error::Api(status)) if status.code == 400 => return Ok(None),
        Err(e) => return Err(as_log_gap(cluster.explain(&e, &what))),
    };
    // The API server stops near the bound, not exactly at it.
    let cut = body.len() >= spec.limit_bytes.saturating_sub(1024);
    let lines = parse_timestamped(&body, cut);
    Ok(Some(LogRead {
        since: spec.covered_from(&lines, cut),
        lines,
        cut,
        bytes: body.len(),
    }))
}

/// What a path segment or query value keeps as is (RFC 3986's unreserved).
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The path and query of one read: timestamps on, bounded, from `since`.
fn log_path(namespace: &str, request: &LogRequest, spec: ReadSpec) -> String {
    let encode = |s: &str| utf8_percent_encode(s, UNRESERVED).to_string();
    let mut path = format!(
        "/api/v1/namespaces/{}/pods/{}/log?container={}&timestamps=true&limitBytes={}&sinceTime={}",
        encode(namespace),
        encode(&request.pod),
        encode(&request.container),
        spec.limit_bytes.max(1),
        encode(&spec.since.to_rfc3339_opts(SecondsFormat::Secs, true)),
    );
    if let Some(tail) = spec.tail_lines {
        path.push_str(&format!("&tailLines={tail}"));
    }
    if request.previous {
        path.push_str("&previous=true");
    }
    path
}

fn log_gap(reason: String, retryable: bool) -> Error {
    Error::Source {
        source_name: source::POD_LOGS,
        reason,
        retryable,
    }
}

/// The cluster's gaps name `pods/log` as the source, with the same reason.
fn as_log_gap(error: Error) -> Error {
    match error {
        Error::Source {
            reason, retryable, ..
        } => log_gap(reason, retryable),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;

    #[test]
    fn the_read_asks_for_timestamps_a_bound_and_the_previous_instance_when_wanted() {
        let since = DateTime::parse_from_rfc3339("2026-12-04T08:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        let request = LogRequest {
            pod: "web-7f4c9b6d52-8wjzc".into(),
            container: "app".into(),
            previous: true,
            why: "restarted".into(),
        };
        assert_eq!(
            log_path(
                "shop",
                &request,
                ReadSpec {
                    since,
                    tail_lines: Some(800),
                    limit_bytes: 131_072,
                },
            ),
            "/api/v1/namespaces/shop/pods/web-7f4c9b6d52-8wjzc/log?container=app&timestamps=true&limitBytes=131072&sinceTime=2026-12-04T08%3A00%3A00Z&tailLines=800&previous=true"
        );
    }
}
