//! Prometheus, reached directly (`PROMETHEUS_URL`) or through the API
//! server's service proxy (`PROMETHEUS_SERVICE`): CPU, throttling and memory
//! per pod over the metric window, three range queries at once.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::evidence::source;
use crate::evidence::workload::{PerPod, PodSeries};

/// Where Prometheus is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrometheusAccess {
    /// `PROMETHEUS_URL`.
    Direct(String),
    /// `PROMETHEUS_SERVICE=namespace/name:port`, through the API server's service proxy.
    ServiceProxy { namespace: String, service: String },
}

impl PrometheusAccess {
    /// Parses `namespace/name:port`.
    pub fn service(text: &str) -> Option<Self> {
        let (namespace, service) = text.split_once('/')?;
        (!namespace.is_empty() && service.contains(':')).then(|| PrometheusAccess::ServiceProxy {
            namespace: namespace.to_owned(),
            service: service.to_owned(),
        })
    }
}

/// Where the queries go: a client, the path prefix before `/api/v1`, and
/// how the report names the source.
#[derive(Clone)]
pub struct PrometheusEndpoint {
    pub client: kube::Client,
    pub prefix: String,
    pub origin: String,
}

impl std::fmt::Debug for PrometheusEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusEndpoint")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

pub(crate) fn failure(reason: String) -> Error {
    Error::Source {
        source_name: source::POD_SERIES,
        reason,
        retryable: true,
    }
}

impl PrometheusEndpoint {
    /// Prometheus at `url`, with the same bounds as the API server's client.
    pub fn direct(url: &str, timeout: Duration) -> Result<Self> {
        let mut config = kube::Config::new(
            url.parse()
                .map_err(|e| failure(format!("PROMETHEUS_URL {url:?}: {e}")))?,
        );
        config.connect_timeout = Some(timeout);
        config.read_timeout = Some(timeout);
        config.default_retry = false;
        let client = kube::Client::try_from(config).map_err(|e| failure(e.to_string()))?;
        Ok(PrometheusEndpoint {
            client,
            prefix: String::new(),
            origin: format!("Prometheus at {url}"),
        })
    }

    /// The in-cluster Prometheus `namespace/service:port`, through the API server.
    pub fn service_proxy(client: kube::Client, namespace: &str, service: &str) -> Self {
        PrometheusEndpoint {
            client,
            prefix: format!("/api/v1/namespaces/{namespace}/services/{service}/proxy"),
            origin: format!(
                "in-cluster Prometheus {namespace}/{service} through the API server's service proxy"
            ),
        }
    }

    /// CPU, throttling and memory per pod over `[start, end]`.
    pub async fn pod_series(
        &self,
        namespace: &str,
        pods: &[String],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> Result<PodSeries> {
        let PrometheusEndpoint {
            client,
            prefix,
            origin,
        } = self;
        let pod_regex = pods
            .iter()
            .map(|p| regex_escape(p))
            .collect::<Vec<_>>()
            .join("|");
        let selector = format!(
            "namespace=\"{namespace}\", pod=~\"{pod_regex}\", container!=\"\", container!=\"POD\""
        );
        let window = format!("{}s", (step_seconds * 2).max(120));
        let queries = [
            format!(
                "sum by (pod) (rate(container_cpu_usage_seconds_total{{{selector}}}[{window}]))"
            ),
            format!(
                "sum by (pod) (rate(container_cpu_cfs_throttled_periods_total{{{selector}}}[{window}])) / sum by (pod) (rate(container_cpu_cfs_periods_total{{{selector}}}[{window}]))"
            ),
            format!("sum by (pod) (container_memory_working_set_bytes{{{selector}}})"),
        ];
        let fetch = |query: &String| {
            let path = format!(
                "{prefix}/api/v1/query_range?query={}&start={}&end={}&step={step_seconds}",
                percent_encoding::utf8_percent_encode(query, percent_encoding::NON_ALPHANUMERIC),
                start.timestamp(),
                end.timestamp()
            );
            let client = client.clone();
            let who = origin.clone();
            async move {
                let request = http::Request::get(path)
                    .body(Vec::new())
                    .map_err(|e| failure(e.to_string()))?;
                let text = client
                    .request_text(request)
                    .await
                    .map_err(|e| failure(prometheus_failure(&e, &who)))?;
                parse_matrix(&text).map_err(failure)
            }
        };
        let (cpu, throttled, memory) =
            tokio::join!(fetch(&queries[0]), fetch(&queries[1]), fetch(&queries[2]));
        Ok(PodSeries {
            step_seconds,
            cpu: cpu?,
            throttled: throttled.unwrap_or_default(),
            memory: memory.unwrap_or_default(),
            origin: origin.clone(),
        })
    }
}

/// What Prometheus (or the proxy in front of it) answered, by status; or
/// that it could not be reached at all.
fn prometheus_failure(error: &kube::Error, origin: &str) -> String {
    match error {
        kube::Error::Api(status) => {
            // kube-rs keeps a body that is not a Kubernetes Status as the message:
            // Prometheus's own error document says what went wrong.
            let body: Option<Value> = serde_json::from_str(&status.message).ok();
            let detail = match body.as_ref().and_then(|b| b["error"].as_str()) {
                Some(error) => format!(
                    "{}: {error}",
                    body.as_ref()
                        .and_then(|b| b["errorType"].as_str())
                        .unwrap_or("error")
                ),
                None => status.message.clone(),
            };
            format!(
                "{origin} answered HTTP {}: {}",
                status.code,
                crate::render::truncate(&crate::render::one_line(&detail), 200)
            )
        }
        other if super::kubernetes::timed_out(other) => {
            format!("no answer from {origin} within the read timeout (KUBE_TIMEOUT_MS): {other}")
        }
        other => format!("could not reach {origin}: {other}"),
    }
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                vec![c]
            } else {
                vec!['\\', '\\', c]
            }
        })
        .collect()
}

/// A Prometheus `matrix` answer, by pod.
fn parse_matrix(text: &str) -> std::result::Result<PerPod, String> {
    let answer: Value = serde_json::from_str(text)
        .map_err(|e| format!("Prometheus answered something that is not JSON ({e})"))?;
    if answer["status"] != "success" {
        return Err(format!(
            "Prometheus answered {}: {}",
            answer["errorType"], answer["error"]
        ));
    }
    let mut out = BTreeMap::new();
    for series in answer["data"]["result"].as_array().into_iter().flatten() {
        let Some(pod) = series["metric"]["pod"].as_str() else {
            continue;
        };
        let points = series["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|pair| {
                let t = pair.get(0)?.as_f64()?;
                let v: f64 = pair.get(1)?.as_str()?.parse().ok()?;
                Some((DateTime::from_timestamp(t as i64, 0)?, v))
            })
            .filter(|(_, v)| v.is_finite())
            .collect();
        out.insert(pod.to_owned(), points);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_matrices_are_read_by_pod() {
        let text = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"pod":"a"},"values":[[1795985100,"0.5"],[1795985160,"NaN"],[1795985220,"0.9"]]}]}}"#;
        let series = parse_matrix(text).unwrap();
        assert_eq!(series["a"].len(), 2);
        assert!(
            parse_matrix(r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#)
                .unwrap_err()
                .contains("parse error")
        );
    }

    #[test]
    fn prometheus_services_are_namespace_slash_name_colon_port() {
        assert_eq!(
            PrometheusAccess::service("monitoring/prometheus-server:9090"),
            Some(PrometheusAccess::ServiceProxy {
                namespace: "monitoring".into(),
                service: "prometheus-server:9090".into()
            })
        );
        assert_eq!(PrometheusAccess::service("prometheus"), None);
    }

    #[test]
    fn pod_names_are_escaped_for_a_promql_regex() {
        assert_eq!(
            regex_escape("checkout-7c9d6b5f8-2xkqp"),
            "checkout-7c9d6b5f8-2xkqp"
        );
        assert_eq!(regex_escape("a.b"), "a\\\\.b");
    }
}
