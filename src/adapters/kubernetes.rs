//! Kubernetes (through kube-rs) and Prometheus (directly, or through the API
//! server's service proxy): the workload behind a target group and its pods'
//! time series. Read-only: get and list only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::{v1 as hpa_v1, v2 as hpa_v2};
use k8s_openapi::api::core::v1::{Event, Node, Pod, Service};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

use super::eks::{EksCluster, describe_cluster, token};
use crate::error::{Error, Result};
use crate::evidence::service_map::{MappingSource, ServiceRef};
use crate::evidence::source;
use crate::evidence::workload::{
    Condition, ContainerInfo, DeploymentInfo, HpaInfo, NodeCapacity, PerPod, PodInfo, PodSeries,
    PodUsage, Workload, WorkloadTarget, bytes, cpu_cores,
};

/// How the function reaches the cluster.
#[derive(Debug, Clone)]
pub struct ClusterAccess {
    /// A kubeconfig (local runs); else the EKS endpoint with an EKS token.
    pub kubeconfig: Option<PathBuf>,
    /// `EKS_CLUSTER_NAME`; else the target group's `elbv2.k8s.aws/cluster` tag.
    pub cluster_name: Option<String>,
    pub eks: aws_sdk_eks::Client,
    pub credentials: Option<aws_credential_types::provider::SharedCredentialsProvider>,
    pub region: String,
    pub timeout: Duration,
}

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

/// Reads the cluster and Prometheus.
#[derive(Debug, Clone)]
pub struct KubeSource {
    pub access: ClusterAccess,
    pub prometheus: Option<PrometheusAccess>,
    /// The last connection, reused while its token is fresh (EKS tokens last 15 minutes).
    connection: std::sync::Arc<tokio::sync::Mutex<Option<Connection>>>,
}

/// A connected client and what was learnt while connecting.
#[derive(Clone)]
struct Connection {
    cluster: Option<String>,
    client: kube::Client,
    eks: Option<EksCluster>,
    url: String,
    made: std::time::Instant,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("cluster", &self.cluster)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Reconnect (new token) after this long.
const CONNECTION_TTL: Duration = Duration::from_secs(10 * 60);

fn gap(reason: String, retryable: bool) -> Error {
    Error::Source {
        source_name: source::KUBERNETES,
        reason,
        retryable,
    }
}

impl KubeSource {
    pub fn new(access: ClusterAccess, prometheus: Option<PrometheusAccess>) -> Self {
        KubeSource {
            access,
            prometheus,
            connection: Default::default(),
        }
    }

    /// A client for the cluster, reusing the last one while it is fresh: one
    /// DescribeCluster and one token per cluster and ten minutes, however many calls.
    async fn connect(
        &self,
        cluster: Option<&str>,
    ) -> Result<(kube::Client, Option<EksCluster>, String)> {
        let wanted = self
            .access
            .cluster_name
            .as_deref()
            .or(cluster)
            .map(str::to_owned);
        let mut cached = self.connection.lock().await;
        if let Some(c) = cached
            .as_ref()
            .filter(|c| c.cluster == wanted && c.made.elapsed() < CONNECTION_TTL)
        {
            return Ok((c.client.clone(), c.eks.clone(), c.url.clone()));
        }
        let (client, eks, url) = self.connect_fresh(wanted.as_deref()).await?;
        *cached = Some(Connection {
            cluster: wanted,
            client: client.clone(),
            eks: eks.clone(),
            url: url.clone(),
            made: std::time::Instant::now(),
        });
        Ok((client, eks, url))
    }

    /// A client for the cluster, and what EKS says about it (when it could be asked).
    async fn connect_fresh(
        &self,
        cluster: Option<&str>,
    ) -> Result<(kube::Client, Option<EksCluster>, String)> {
        let access = &self.access;
        let cluster_name = access.cluster_name.as_deref().or(cluster);
        let eks = match cluster_name {
            Some(name) => Some(describe_cluster(&access.eks, name).await),
            None => None,
        };
        let mut config = if let Some(path) = &access.kubeconfig {
            let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| {
                gap(
                    format!("cannot read the kubeconfig {}: {e}", path.display()),
                    false,
                )
            })?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|e| {
                    gap(
                        format!("unusable kubeconfig {}: {e}", path.display()),
                        false,
                    )
                })?
        } else {
            let Some(name) = cluster_name else {
                return Err(gap(
                    "no cluster to read: set EKS_CLUSTER_NAME, or tag the target group with elbv2.k8s.aws/cluster".to_owned(),
                    false,
                ));
            };
            let cluster = match &eks {
                Some(Ok(cluster)) => cluster.clone(),
                Some(Err(Error::Source {
                    reason, retryable, ..
                })) => return Err(gap(format!("eks:DescribeCluster: {reason}"), *retryable)),
                Some(Err(e)) => return Err(gap(e.to_string(), e.is_retryable())),
                None => unreachable_cluster(name)?,
            };
            let endpoint = cluster.endpoint.clone().ok_or_else(|| {
                gap(
                    format!(
                        "eks:DescribeCluster gave no endpoint for {name} (is it still creating?)"
                    ),
                    true,
                )
            })?;
            let mut config = kube::Config::new(endpoint.parse().map_err(|e| {
                gap(
                    format!("cluster endpoint {endpoint:?} is not a URL: {e}"),
                    false,
                )
            })?);
            config.root_cert = cluster.ca_der().map(|der| vec![der]);
            let provider = access.credentials.as_ref().ok_or_else(|| {
                gap(
                    "no AWS credentials to sign an EKS token with".to_owned(),
                    false,
                )
            })?;
            use aws_credential_types::provider::ProvideCredentials;
            let credentials = provider
                .provide_credentials()
                .await
                .map_err(|e| gap(format!("no AWS credentials for the EKS token: {e}"), true))?;
            let bearer = token(&credentials, &access.region, name, SystemTime::now())?;
            config.auth_info.token = Some(bearer.into());
            config
        };
        config.connect_timeout = Some(access.timeout);
        config.read_timeout = Some(access.timeout);
        config.write_timeout = Some(access.timeout);
        // kube-rs retries 429/503/504 up to 15 times by default; the ledger's
        // bound decides instead, and the gap names the status.
        config.default_retry = false;
        let url = config.cluster_url.to_string();
        let client = kube::Client::try_from(config)
            .map_err(|e| gap(format!("cannot build a Kubernetes client: {e}"), false))?;
        Ok((client, eks.and_then(Result::ok), url))
    }
}

fn unreachable_cluster(name: &str) -> Result<EksCluster> {
    Err(gap(format!("cluster {name} could not be described"), true))
}

/// Turns a kube-rs error into a gap that says what to fix.
fn explain(error: &kube::Error, what: &str, url: &str, eks: Option<&EksCluster>) -> Error {
    match error {
        kube::Error::Api(status) if status.code == 401 => gap(
            format!(
                "401 Unauthorized from the API server while reading {what}: the function's IAM role has no access entry (or aws-auth mapping) on the cluster; create one bound to the alarm-triage read-only group (infra/k8s/README.md)"
            ),
            false,
        ),
        kube::Error::Api(status) if status.code == 403 => gap(
            format!(
                "403 Forbidden reading {what}: {}; grant get/list on it to the alarm-triage group (infra/k8s/clusterrole.yaml)",
                status.message
            ),
            false,
        ),
        kube::Error::Api(status) => gap(
            format!(
                "{} {} reading {what}: {}",
                status.code, status.reason, status.message
            ),
            status.code >= 500,
        ),
        other if timed_out(other) => gap(
            format!(
                "no answer from the API server at {url} reading {what} within the read timeout (KUBE_TIMEOUT_MS): {other}"
            ),
            true,
        ),
        other => {
            let private = eks.is_some_and(|c| !c.public_access);
            let hint = if private {
                " The cluster's API endpoint is private (endpointPublicAccess=false): run the function in the cluster's VPC (VpcConfig subnets and a security group the cluster security group accepts on 443)."
            } else {
                " Check that the endpoint is reachable from the function (public access CIDRs, VPC routing)."
            };
            gap(
                format!("could not reach the API server at {url} reading {what}: {other}.{hint}"),
                true,
            )
        }
    }
}

/// Whether a transport error is a timeout somewhere down its chain of causes.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
            || e.to_string().to_ascii_lowercase().contains("timed out")
        {
            return true;
        }
        cause = e.source();
    }
    false
}

fn time_of(
    t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Option<DateTime<Utc>> {
    let text = serde_json::to_value(t?).ok()?;
    DateTime::parse_from_rfc3339(text.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn quantity(
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    key: &str,
) -> Option<String> {
    map?.get(key).map(|q| q.0.clone())
}

fn pod_info(pod: &Pod) -> PodInfo {
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    PodInfo {
        name: pod.metadata.name.clone().unwrap_or_default(),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".to_owned()),
        node: spec.and_then(|s| s.node_name.clone()),
        ready: status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
        restarts: status
            .and_then(|s| s.container_statuses.as_ref())
            .map_or(0, |c| {
                c.iter()
                    .map(|c| u32::try_from(c.restart_count).unwrap_or(0))
                    .sum()
            }),
        owner_replica_set: pod
            .metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.iter().find(|o| o.kind == "ReplicaSet"))
            .map(|o| o.name.clone()),
        created: time_of(pod.metadata.creation_timestamp.as_ref()),
        containers: spec
            .map(|s| {
                s.containers
                    .iter()
                    .map(|c| {
                        let resources = c.resources.as_ref();
                        ContainerInfo {
                            name: c.name.clone(),
                            cpu_request: quantity(
                                resources.and_then(|r| r.requests.as_ref()),
                                "cpu",
                            )
                            .and_then(|q| cpu_cores(&q)),
                            cpu_limit: quantity(resources.and_then(|r| r.limits.as_ref()), "cpu")
                                .and_then(|q| cpu_cores(&q)),
                            memory_limit: quantity(
                                resources.and_then(|r| r.limits.as_ref()),
                                "memory",
                            )
                            .and_then(|q| bytes(&q)),
                            readiness_probe: c.readiness_probe.is_some(),
                            liveness_probe: c.liveness_probe.is_some(),
                            args: c.args.clone().unwrap_or_default(),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default(),
        scheduling_messages: Vec::new(),
    }
}

fn selector_string(selector: &BTreeMap<String, String>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl crate::evidence::KubernetesSource for KubeSource {
    async fn prepare(&self) -> Result<()> {
        // Connect early when the cluster is known from configuration, so that
        // DescribeCluster overlaps the load balancer calls instead of following them.
        if self.access.cluster_name.is_some() || self.access.kubeconfig.is_some() {
            self.connect(None).await?;
        }
        Ok(())
    }

    async fn workload(&self, target: &WorkloadTarget) -> Result<Workload> {
        let (client, eks, url) = self.connect(target.cluster.as_deref()).await?;
        let cluster = self
            .access
            .cluster_name
            .clone()
            .or_else(|| target.cluster.clone());
        let mut partial = Vec::new();

        // Target group -> Service: the controller's TargetGroupBinding first.
        let bindings = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("elbv2.k8s.aws", "v1beta1", "TargetGroupBinding"),
            "targetgroupbindings",
        );
        let bound = match Api::<DynamicObject>::all_with(client.clone(), &bindings)
            .list(&ListParams::default())
            .await
        {
            Ok(list) => list.items.into_iter().find_map(|b| {
                (b.data["spec"]["targetGroupARN"].as_str()
                    == Some(target.target_group_arn.as_str()))
                .then(|| ServiceRef {
                    namespace: b.metadata.namespace.clone().unwrap_or_default(),
                    name: b.data["spec"]["serviceRef"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    source: MappingSource::TargetGroupBinding,
                })
            }),
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 403 => {
                partial.push((
                    "targetgroupbindings".to_owned(),
                    format!("{} {}: {}", status.code, status.reason, status.message),
                ));
                None
            }
            Err(e) => return Err(explain(&e, "targetgroupbindings", &url, eks.as_ref())),
        };
        let service_ref = bound.or_else(|| target.service_hint.clone()).ok_or_else(|| {
            gap(
                format!(
                    "no TargetGroupBinding names {} and neither its tags nor its name point at a service",
                    target.target_group_name
                ),
                false,
            )
        })?;
        let ns = service_ref.namespace.clone();
        let service = Api::<Service>::namespaced(client.clone(), &ns)
            .get(&service_ref.name)
            .await
            .map_err(|e| {
                explain(
                    &e,
                    &format!("service {ns}/{}", service_ref.name),
                    &url,
                    eks.as_ref(),
                )
            })?;
        let selector: BTreeMap<String, String> =
            service.spec.and_then(|s| s.selector).unwrap_or_default();
        if selector.is_empty() {
            return Err(gap(
                format!(
                    "service {ns}/{} has no selector: its pods cannot be found",
                    service_ref.name
                ),
                false,
            ));
        }
        let labels = selector_string(&selector);
        let list = ListParams::default().labels(&labels);

        let pods_api = Api::<Pod>::namespaced(client.clone(), &ns);
        let sets_api = Api::<ReplicaSet>::namespaced(client.clone(), &ns);
        let hpa_api = Api::<hpa_v2::HorizontalPodAutoscaler>::namespaced(client.clone(), &ns);
        let pod_metrics = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
            "pods",
        );
        let metrics_api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &pod_metrics);
        let all = ListParams::default();
        let (pods, sets, hpas_v2, metrics) = tokio::join!(
            pods_api.list(&list),
            sets_api.list(&list),
            hpa_api.list(&all),
            metrics_api.list(&list),
        );
        let mut pods: Vec<PodInfo> = pods
            .map_err(|e| explain(&e, &format!("pods {labels} in {ns}"), &url, eks.as_ref()))?
            .items
            .iter()
            .map(pod_info)
            .collect();
        pods.sort_by(|a, b| a.name.cmp(&b.name));

        // Deployment: the owner of the pods' ReplicaSet; the newest ReplicaSet dates the last rollout.
        let mut deployment = None;
        match sets {
            Ok(sets) => {
                let owner_of = |rs: &ReplicaSet| {
                    rs.metadata
                        .owner_references
                        .as_ref()
                        .and_then(|o| o.iter().find(|o| o.kind == "Deployment"))
                        .map(|o| o.name.clone())
                };
                let current = pods.iter().find_map(|p| p.owner_replica_set.clone());
                let name = sets
                    .items
                    .iter()
                    .find(|rs| rs.metadata.name == current)
                    .and_then(owner_of)
                    .or_else(|| sets.items.iter().find_map(owner_of));
                if let Some(name) = name {
                    let last_rollout = sets
                        .items
                        .iter()
                        .filter(|rs| owner_of(rs).as_deref() == Some(name.as_str()))
                        .filter_map(|rs| time_of(rs.metadata.creation_timestamp.as_ref()))
                        .max();
                    match Api::<Deployment>::namespaced(client.clone(), &ns)
                        .get(&name)
                        .await
                    {
                        Ok(d) => {
                            let spec = d.spec.as_ref();
                            deployment = Some(DeploymentInfo {
                                name: name.clone(),
                                replicas: spec.and_then(|s| s.replicas),
                                ready_replicas: d.status.as_ref().and_then(|s| s.ready_replicas),
                                strategy: spec
                                    .and_then(|s| s.strategy.as_ref())
                                    .and_then(|s| s.type_.clone()),
                                revision: d.metadata.annotations.as_ref().and_then(|a| {
                                    a.get("deployment.kubernetes.io/revision").cloned()
                                }),
                                last_rollout,
                            });
                        }
                        Err(e) => partial.push((
                            format!("deployment {ns}/{name}"),
                            explain(&e, "the deployment", &url, eks.as_ref()).to_string(),
                        )),
                    }
                }
            }
            Err(e) => partial.push((
                "replicasets".to_owned(),
                explain(&e, "replicasets", &url, eks.as_ref()).to_string(),
            )),
        }

        // HPA: autoscaling/v2 preferred, v1 understood.
        let scales = |kind: &str, name: &str| {
            deployment
                .as_ref()
                .is_some_and(|d| kind == "Deployment" && name == d.name)
        };
        let hpa = match hpas_v2 {
            Ok(list) => list
                .items
                .into_iter()
                .find(|h| {
                    h.spec
                        .as_ref()
                        .is_some_and(|s| scales(&s.scale_target_ref.kind, &s.scale_target_ref.name))
                })
                .map(|h| hpa_from_v2(&h)),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                match Api::<hpa_v1::HorizontalPodAutoscaler>::namespaced(client.clone(), &ns)
                    .list(&ListParams::default())
                    .await
                {
                    Ok(list) => list
                        .items
                        .into_iter()
                        .find(|h| {
                            h.spec.as_ref().is_some_and(|s| {
                                scales(&s.scale_target_ref.kind, &s.scale_target_ref.name)
                            })
                        })
                        .map(|h| hpa_from_v1(&h)),
                    Err(e) => {
                        partial.push((
                            "horizontalpodautoscalers".to_owned(),
                            explain(&e, "HPAs", &url, eks.as_ref()).to_string(),
                        ));
                        None
                    }
                }
            }
            Err(e) => {
                partial.push((
                    "horizontalpodautoscalers".to_owned(),
                    explain(&e, "HPAs", &url, eks.as_ref()).to_string(),
                ));
                None
            }
        };

        let snapshot = match metrics {
            Ok(list) => Some(
                list.items
                    .iter()
                    .map(|m| PodUsage {
                        pod: m.metadata.name.clone().unwrap_or_default(),
                        cpu_cores: sum_usage(&m.data, "cpu", cpu_cores),
                        memory_bytes: sum_usage(&m.data, "memory", bytes),
                    })
                    .collect(),
            ),
            Err(e) => {
                partial.push((
                    "metrics.k8s.io pods".to_owned(),
                    explain(&e, "PodMetrics", &url, eks.as_ref()).to_string(),
                ));
                None
            }
        };

        // Pending pods: why they do not schedule, and what the nodes have left.
        let mut nodes = Vec::new();
        if pods.iter().any(|p| p.phase == "Pending") {
            let events = Api::<Event>::namespaced(client.clone(), &ns);
            for pod in pods.iter_mut().filter(|p| p.phase == "Pending") {
                if let Ok(list) = events
                    .list(
                        &ListParams::default().fields(&format!("involvedObject.name={}", pod.name)),
                    )
                    .await
                {
                    pod.scheduling_messages = list
                        .items
                        .iter()
                        .filter_map(|e| e.message.clone())
                        .collect();
                }
            }
            nodes = node_capacity(&client).await.unwrap_or_default();
        }

        Ok(Workload {
            cluster,
            service: service_ref,
            selector,
            pods,
            deployment,
            hpa,
            snapshot,
            nodes,
            partial,
        })
    }

    async fn pod_series(
        &self,
        namespace: &str,
        pods: &[String],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> Result<PodSeries> {
        let Some(prometheus) = &self.prometheus else {
            return Err(Error::Source {
                source_name: source::POD_SERIES,
                reason: "no Prometheus configured (PROMETHEUS_URL or PROMETHEUS_SERVICE)"
                    .to_owned(),
                retryable: false,
            });
        };
        let failure = |reason: String| Error::Source {
            source_name: source::POD_SERIES,
            reason,
            retryable: true,
        };
        let (client, prefix, origin) = match prometheus {
            PrometheusAccess::Direct(url) => {
                let mut config = kube::Config::new(
                    url.parse()
                        .map_err(|e| failure(format!("PROMETHEUS_URL {url:?}: {e}")))?,
                );
                config.connect_timeout = Some(self.access.timeout);
                config.read_timeout = Some(self.access.timeout);
                config.default_retry = false;
                let client = kube::Client::try_from(config).map_err(|e| failure(e.to_string()))?;
                (client, String::new(), format!("Prometheus at {url}"))
            }
            PrometheusAccess::ServiceProxy {
                namespace: pns,
                service,
            } => {
                let (client, _, _) = self
                    .connect(None)
                    .await
                    .map_err(|e| failure(format!("{e}")))?;
                (
                    client,
                    format!("/api/v1/namespaces/{pns}/services/{service}/proxy"),
                    format!(
                        "in-cluster Prometheus {pns}/{service} through the API server's service proxy"
                    ),
                )
            }
        };
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
        let who = origin.clone();
        let fetch = |query: &String| {
            let path = format!(
                "{prefix}/api/v1/query_range?query={}&start={}&end={}&step={step_seconds}",
                percent_encoding::utf8_percent_encode(query, percent_encoding::NON_ALPHANUMERIC),
                start.timestamp(),
                end.timestamp()
            );
            let client = client.clone();
            let who = who.clone();
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
            origin,
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
        other if timed_out(other) => {
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

fn sum_usage(data: &Value, resource: &str, parse: fn(&str) -> Option<f64>) -> f64 {
    data["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["usage"][resource].as_str().and_then(parse))
        .sum()
}

fn hpa_from_v2(h: &hpa_v2::HorizontalPodAutoscaler) -> HpaInfo {
    let spec = h.spec.as_ref();
    let status = h.status.as_ref();
    let mut target = None;
    let mut other = Vec::new();
    for metric in spec.and_then(|s| s.metrics.as_ref()).into_iter().flatten() {
        match metric.resource.as_ref() {
            Some(r) if r.name == "cpu" => target = r.target.average_utilization,
            Some(r) => other.push(format!("resource {}", r.name)),
            None => other.push(metric.type_.clone()),
        }
    }
    let current = status
        .and_then(|s| s.current_metrics.as_ref())
        .into_iter()
        .flatten()
        .find_map(|m| {
            m.resource
                .as_ref()
                .filter(|r| r.name == "cpu")
                .and_then(|r| r.current.average_utilization)
        });
    HpaInfo {
        name: h.metadata.name.clone().unwrap_or_default(),
        api_version: "autoscaling/v2".to_owned(),
        created_as_v1: h
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kubectl.kubernetes.io/last-applied-configuration"))
            .is_some_and(|c| c.contains("\"autoscaling/v1\"")),
        min_replicas: spec.and_then(|s| s.min_replicas),
        max_replicas: spec.map_or(0, |s| s.max_replicas),
        target_cpu_utilization: target,
        other_metrics: other,
        current_replicas: status.and_then(|s| s.current_replicas),
        desired_replicas: status.map(|s| s.desired_replicas),
        current_cpu_utilization: current,
        conditions: status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| Condition {
                kind: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect(),
    }
}

fn hpa_from_v1(h: &hpa_v1::HorizontalPodAutoscaler) -> HpaInfo {
    let spec = h.spec.as_ref();
    let status = h.status.as_ref();
    HpaInfo {
        name: h.metadata.name.clone().unwrap_or_default(),
        api_version: "autoscaling/v1".to_owned(),
        created_as_v1: true,
        min_replicas: spec.and_then(|s| s.min_replicas),
        max_replicas: spec.map_or(0, |s| s.max_replicas),
        target_cpu_utilization: spec.and_then(|s| s.target_cpu_utilization_percentage),
        other_metrics: Vec::new(),
        current_replicas: status.map(|s| s.current_replicas),
        desired_replicas: status.map(|s| s.desired_replicas),
        current_cpu_utilization: status.and_then(|s| s.current_cpu_utilization_percentage),
        conditions: Vec::new(),
    }
}

async fn node_capacity(
    client: &kube::Client,
) -> std::result::Result<Vec<NodeCapacity>, kube::Error> {
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default().fields("status.phase=Running"))
        .await?;
    Ok(nodes
        .items
        .iter()
        .map(|n| {
            let name = n.metadata.name.clone().unwrap_or_default();
            let allocatable = quantity(
                n.status.as_ref().and_then(|s| s.allocatable.as_ref()),
                "cpu",
            )
            .and_then(|q| cpu_cores(&q))
            .unwrap_or(0.0);
            let requested = pods
                .items
                .iter()
                .filter(|p| {
                    p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name.as_str())
                })
                .map(|p| pod_info(p).cpu_request().unwrap_or(0.0))
                .sum();
            NodeCapacity {
                name,
                allocatable_cpu: allocatable,
                requested_cpu: requested,
            }
        })
        .collect())
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
