//! The connection to the cluster: a kubeconfig (local runs) or the EKS
//! endpoint with a token signed by the function's credentials, cached while
//! the token is fresh; and the errors of the API server turned into gaps that
//! say what to fix.

use std::time::{Duration, SystemTime};

use super::KubeSource;
use crate::adapters::eks::{EksCluster, describe_cluster, token};
use crate::error::{Error, Result};
use crate::evidence::source;

/// A client for one cluster, with what is needed to explain its errors.
#[derive(Clone)]
pub struct Cluster {
    pub client: kube::Client,
    pub eks: Option<EksCluster>,
    pub url: String,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// A kube-rs error reading `what`, as a gap that says what to fix.
    pub fn explain(&self, error: &kube::Error, what: &str) -> Error {
        explain(error, what, &self.url, self.eks.as_ref())
    }
}

/// A connected client and what was learnt while connecting.
#[derive(Clone)]
pub(super) struct Connection {
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
pub(super) const CONNECTION_TTL: Duration = Duration::from_secs(10 * 60);

pub(super) fn gap(reason: String, retryable: bool) -> Error {
    Error::Source {
        source_name: source::KUBERNETES,
        reason,
        retryable,
    }
}

impl KubeSource {
    /// A client for the cluster, reusing the last one while it is fresh: one
    /// DescribeCluster and one token per cluster and ten minutes, however many calls.
    pub(super) async fn connect(&self, cluster: Option<&str>) -> Result<Cluster> {
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
            return Ok(Cluster {
                client: c.client.clone(),
                eks: c.eks.clone(),
                url: c.url.clone(),
            });
        }
        let (client, eks, url) = self.connect_fresh(wanted.as_deref()).await?;
        *cached = Some(Connection {
            cluster: wanted,
            client: client.clone(),
            eks: eks.clone(),
            url: url.clone(),
            made: std::time::Instant::now(),
        });
        Ok(Cluster { client, eks, url })
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
pub(crate) fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
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
