//! Kubernetes through kube-rs: the connection ([`connection`]), the workload
//! walk behind a target group ([`workload`]), and Prometheus reached through
//! the same access ([`crate::adapters::prometheus`]). Read-only: get and list only.

mod changes;
pub(crate) mod connection;
mod logs;
mod placement;
mod provisioning;
mod timestamps;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};

pub use crate::adapters::prometheus::PrometheusAccess;
use crate::adapters::prometheus::PrometheusEndpoint;
use crate::error::{Error, Result};
use crate::evidence::source;
use crate::evidence::workload::{
    PodSeries, PodsListed, TargetGroupBindings, Workload, WorkloadTarget,
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

impl ClusterAccess {
    /// The cluster is known before the culprit is (configuration, not a tag).
    fn known_up_front(&self) -> bool {
        self.cluster_name.is_some() || self.kubeconfig.is_some()
    }
}

/// Reads the cluster and Prometheus.
#[derive(Debug, Clone)]
pub struct KubeSource {
    pub access: ClusterAccess,
    pub prometheus: Option<PrometheusAccess>,
    /// The last connection, reused while its token is fresh (EKS tokens last 15 minutes).
    connection: std::sync::Arc<tokio::sync::Mutex<Option<connection::Connection>>>,
}

impl KubeSource {
    pub fn new(access: ClusterAccess, prometheus: Option<PrometheusAccess>) -> Self {
        KubeSource {
            access,
            prometheus,
            connection: Default::default(),
        }
    }

    /// The EKS cluster the pods live in: the walk's, else the configured one.
    pub fn cluster_of(&self, pods: &PodsListed) -> Option<String> {
        pods.cluster
            .clone()
            .or_else(|| self.access.cluster_name.clone())
    }

    /// Prometheus, reached through the cluster the walk read when it is behind
    /// the API server's service proxy.
    async fn prometheus(&self, cluster: Option<&str>) -> Result<PrometheusEndpoint> {
        match &self.prometheus {
            None => Err(Error::Source {
                source_name: source::POD_SERIES,
                reason: "no Prometheus configured (PROMETHEUS_URL or PROMETHEUS_SERVICE)"
                    .to_owned(),
                retryable: false,
            }),
            Some(PrometheusAccess::Direct { url, sigv4_region }) => {
                let endpoint = PrometheusEndpoint::direct(url, self.access.timeout)?;
                let Some(region) = sigv4_region else {
                    return Ok(endpoint);
                };
                let unsigned = |reason: String| Error::Source {
                    source_name: source::POD_SERIES,
                    reason: format!("cannot sign the queries to {url} (SigV4, aps): {reason}"),
                    retryable: true,
                };
                let provider = self
                    .access
                    .credentials
                    .as_ref()
                    .ok_or_else(|| unsigned("no AWS credentials".to_owned()))?;
                let credentials =
                    aws_credential_types::provider::ProvideCredentials::provide_credentials(
                        provider,
                    )
                    .await
                    .map_err(|e| unsigned(e.to_string()))?;
                Ok(endpoint.signed(crate::adapters::prometheus::Signing {
                    credentials,
                    region: region.clone(),
                    base_url: url.clone(),
                }))
            }
            Some(PrometheusAccess::ServiceProxy { namespace, service }) => {
                let cluster = self
                    .connect(cluster)
                    .await
                    .map_err(|e| crate::adapters::prometheus::failure(e.to_string()))?;
                Ok(PrometheusEndpoint::service_proxy(
                    cluster.client,
                    namespace,
                    service,
                ))
            }
        }
    }
}

impl crate::evidence::KubernetesSource for KubeSource {
    async fn prepare(&self) -> Result<()> {
        // Connect early when the cluster is known from configuration, so that
        // DescribeCluster overlaps the load balancer calls instead of following them.
        if self.access.known_up_front() {
            self.connect(None).await?;
        }
        Ok(())
    }

    async fn target_group_bindings(&self) -> Result<Option<TargetGroupBindings>> {
        if !self.access.known_up_front() {
            return Ok(None);
        }
        let cluster = self.connect(None).await?;
        workload::list_bindings(&cluster).await.map(Some)
    }

    async fn workload(
        &self,
        target: &WorkloadTarget,
        pods_listed: crate::evidence::ports::PodsListedSender,
    ) -> Result<Workload> {
        let cluster = self.connect(target.cluster.as_deref()).await?;
        workload::walk(
            &cluster,
            self.access.cluster_name.clone(),
            target,
            pods_listed,
        )
        .await
    }
}

/// Prometheus, as configured (directly, signed for AMP, or through the
/// API server's service proxy of the cluster the walk read).
impl crate::evidence::PodSeriesSource for KubeSource {
    async fn pod_series(
        &self,
        pods: &PodsListed,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        step_seconds: u32,
    ) -> Result<PodSeries> {
        self.prometheus(pods.cluster.as_deref())
            .await?
            .pod_series(
                &pods.namespace,
                &pods.pods,
                &pods.owners(),
                start,
                end,
                step_seconds,
            )
            .await
    }
}
