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
    /// `PROMETHEUS_URL`; requests are signed with SigV4 (service `aps`) for
    /// this region when it is an Amazon Managed Service for Prometheus
    /// workspace (or `PROMETHEUS_SIGV4_REGION` says so).
    Direct {
        url: String,
        sigv4_region: Option<String>,
    },
    /// `PROMETHEUS_SERVICE=namespace/name:port`, through the API server's service proxy.
    ServiceProxy { namespace: String, service: String },
}

impl PrometheusAccess {
    /// `PROMETHEUS_URL`, signed for `sigv4_region` when given, else for the
    /// region of an AMP endpoint (`https://aps-workspaces.REGION.amazonaws.com/workspaces/ws-...`).
    pub fn direct(url: &str, sigv4_region: Option<&str>) -> Self {
        let amp_region = url
            .strip_prefix("https://aps-workspaces.")
            .and_then(|rest| rest.split_once(".amazonaws.com"))
            .map(|(region, _)| region.to_owned())
            .filter(|r| !r.is_empty() && !r.contains('/'));
        PrometheusAccess::Direct {
            url: url.trim_end_matches('/').to_owned(),
            sigv4_region: sigv4_region.map(str::to_owned).or(amp_region),
        }
    }

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
    /// Requests signed with SigV4 (Amazon Managed Service for Prometheus).
    pub signing: Option<Signing>,
}

/// What a SigV4 signature for `aps` needs: the function's credentials, the
/// workspace's region, and the URL the paths are appended to.
#[derive(Clone, Debug)]
pub struct Signing {
    pub credentials: aws_credential_types::Credentials,
    pub region: String,
    pub base_url: String,
}

impl Signing {
    /// The headers that sign a GET of `path_and_query` at `now` (Authorization,
    /// X-Amz-Date and, with temporary credentials, X-Amz-Security-Token).
    pub fn headers(
        &self,
        path_and_query: &str,
        now: std::time::SystemTime,
    ) -> std::result::Result<Vec<(String, String)>, String> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        let url = format!("{}{path_and_query}", self.base_url);
        let uri: http::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
        let host = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .ok_or_else(|| format!("{url} has no host"))?;
        let request = SignableRequest::new(
            "GET",
            url.clone(),
            [("host", host.as_str())].into_iter(),
            SignableBody::Bytes(&[]),
        )
        .map_err(|e| e.to_string())?;
        let identity: aws_smithy_runtime_api::client::identity::Identity =
            self.credentials.clone().into();
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("aps")
            .time(now)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| e.to_string())?
            .into();
        let (instructions, _) = sign(request, &params)
            .map_err(|e| e.to_string())?
            .into_parts();
        let mut signed = http::Request::get(url)
            .body(())
            .map_err(|e| e.to_string())?;
        instructions.apply_to_request_http1x(&mut signed);
        Ok(signed
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
            })
            .collect())
    }
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
            signing: None,
        })
    }

    /// The same endpoint with every request signed (Amazon Managed Service for Prometheus).
    pub fn signed(self, signing: Signing) -> Self {
        PrometheusEndpoint {
            origin: format!("{} (SigV4, aps, {})", self.origin, signing.region),
            signing: Some(signing),
            ..self
        }
    }

    /// The in-cluster Prometheus `namespace/service:port`, through the API server.
    pub fn service_proxy(client: kube::Client, namespace: &str, service: &str) -> Self {
        PrometheusEndpoint {
            client,
            prefix: format!("/api/v1/namespaces/{namespace}/services/{service}/proxy"),
            origin: format!(
                "in-cluster Prometheus {namespace}/{service} through the API server's service proxy"
            ),
            signing: None,
        }
    }

    /// CPU, throttling and memory per pod over `[start, end]`, and how many
    /// pods the `owners` (Deployments) ran at each step.
    pub async fn pod_series(
        &self,
        namespace: &str,
        pods: &[String],
        owners: &[String],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> Result<PodSeries> {
        let PrometheusEndpoint {
            client,
            prefix,
            origin,
            signing,
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
            // Pressure stall information: time runnable but waiting for a CPU
            // (a saturated node shows here, with or without a limit).
            format!(
                "max by (pod) (rate(container_pressure_cpu_waiting_seconds_total{{{selector}}}[{window}]))"
            ),
            // Every pod of the Deployments' ReplicaSets (`NAME-HASH-SUFFIX`),
            // removed ones included: the fleet's size over time.
            format!(
                "count(sum by (pod) (rate(container_cpu_usage_seconds_total{{namespace=\"{namespace}\", pod=~\"({})-[a-z0-9]+-[a-z0-9]+\", container!=\"\", container!=\"POD\"}}[{window}])))",
                owners
                    .iter()
                    .map(|o| regex_escape(o))
                    .collect::<Vec<_>>()
                    .join("|")
            ),
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
            let signed = signing
                .as_ref()
                .map(|s| s.headers(&path, std::time::SystemTime::now()));
            async move {
                let mut request = http::Request::get(path)
                    .body(Vec::new())
                    .map_err(|e| failure(e.to_string()))?;
                if let Some(signed) = signed {
                    let headers = signed
                        .map_err(|e| failure(format!("could not sign the query for {who}: {e}")))?;
                    for (name, value) in headers {
                        if let (Ok(name), Ok(value)) = (
                            http::header::HeaderName::from_bytes(name.as_bytes()),
                            http::header::HeaderValue::from_str(&value),
                        ) {
                            request.headers_mut().insert(name, value);
                        }
                    }
                }
                let text = client
                    .request_text(request)
                    .await
                    .map_err(|e| failure(prometheus_failure(&e, &who)))?;
                parse_matrix(&text).map_err(failure)
            }
        };
        let count = async {
            if owners.is_empty() {
                return PerPod::default();
            }
            fetch(&queries[4]).await.unwrap_or_default()
        };
        let (cpu, throttled, memory, waiting, count) = tokio::join!(
            fetch(&queries[0]),
            fetch(&queries[1]),
            fetch(&queries[2]),
            fetch(&queries[3]),
            count
        );
        Ok(PodSeries {
            step_seconds,
            cpu: cpu?,
            throttled: throttled.unwrap_or_default(),
            memory: memory.unwrap_or_default(),
            cpu_waiting: waiting.unwrap_or_default(),
            // `count(...)` has no labels: its one series is keyed "".
            pod_count: count.into_values().next().unwrap_or_default(),
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
            // A body that is neither Prometheus's nor a Kubernetes Status (an
            // AWS error document) comes without its HTTP code.
            let answered = if status.code == 0 {
                "refused the query".to_owned()
            } else {
                format!("answered HTTP {}", status.code)
            };
            let advice = if origin.contains("SigV4") {
                " (an AMP workspace refuses a query it cannot verify: check PROMETHEUS_SIGV4_REGION, the function's credentials and aps:QueryMetrics on the workspace)"
            } else {
                ""
            };
            format!(
                "{origin} {answered}: {}{advice}",
                crate::render::truncate(&crate::render::one_line(&detail), 200)
            )
        }
        other if super::kubernetes::connection::timed_out(other) => {
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
        // An aggregate without labels (a count) is kept under "".
        let pod = match series["metric"]["pod"].as_str() {
            Some(pod) => pod,
            None if series["metric"].as_object().is_some_and(|m| m.is_empty()) => "",
            None => continue,
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

    /// Computed with botocore's SigV4Auth (service aps, eu-west-1), as the AWS
    /// CLI and awscurl sign an AMP query, with these credentials at 2026-11-29T12:00:00Z.
    const BOTOCORE_AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/eu-west-1/aps/aws4_request, SignedHeaders=host;x-amz-date, Signature=d793854f6ad4bcf4dcf110d34324a08c7ec109871a547e6b74e7b78ffca39356";

    #[test]
    fn an_amp_query_is_signed_as_botocore_signs_it() {
        let signing = Signing {
            credentials: aws_credential_types::Credentials::new(
                "AKIDEXAMPLE",
                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                None,
                None,
                "test",
            ),
            region: "eu-west-1".to_owned(),
            base_url: "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-0a1b2c3d"
                .to_owned(),
        };
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_953_600);
        let headers = signing
            .headers(
                "/api/v1/query_range?query=up%7Bjob%3D%22a%22%7D&start=1764417600&end=1764421200&step=60",
                at,
            )
            .unwrap();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("authorization"), Some(BOTOCORE_AUTHORIZATION));
        assert_eq!(get("x-amz-date"), Some("20261129T120000Z"));
    }

    #[test]
    fn an_amp_workspace_url_implies_signing_for_its_region() {
        assert_eq!(
            PrometheusAccess::direct(
                "https://aps-workspaces.ap-southeast-2.amazonaws.com/workspaces/ws-1/",
                None
            ),
            PrometheusAccess::Direct {
                url: "https://aps-workspaces.ap-southeast-2.amazonaws.com/workspaces/ws-1".into(),
                sigv4_region: Some("ap-southeast-2".into()),
            }
        );
        assert_eq!(
            PrometheusAccess::direct("http://prometheus:9090", None),
            PrometheusAccess::Direct {
                url: "http://prometheus:9090".into(),
                sigv4_region: None,
            }
        );
        assert!(matches!(
            PrometheusAccess::direct("http://127.0.0.1:9000/workspaces/ws-1", Some("eu-west-1")),
            PrometheusAccess::Direct { sigv4_region: Some(r), .. } if r == "eu-west-1"
        ));
    }
}
