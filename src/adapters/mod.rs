//! Adapters: turn the outside world into the plain data the core works on.
//! One per technology, each built once per cold start.

pub mod accounts;
pub mod cloudtrail;
pub mod cloudwatch;
pub mod container_insights;
pub mod dynamodb;
pub mod eks;
pub mod elbv2;
pub mod kubernetes;
pub mod logs_insights;
pub mod prometheus;
pub mod secrets;
pub mod slack;
pub mod sns;
pub mod sqs;
pub mod warm_cache;

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::error::Error;

/// Bounds every AWS call: each attempt, and the call with its retries, so no
/// SDK call can outlive the invocation, even one awaited outside the evidence
/// ledger (publishing, the cluster connection).
///
/// Retries are the standard mode's (three attempts, jittered exponential
/// backoff), scaled to the bound so that they end inside it and the error
/// says what the service answered ("throttled", "InternalFailure") rather
/// than "no answer". Adaptive mode was tried and rejected: its client-side
/// rate limiter holds a throttled call past any deadline (the fault matrix
/// saw a throttled DescribeCluster end as a bare timeout).
pub fn with_call_limits(
    loader: aws_config::ConfigLoader,
    per_call: std::time::Duration,
) -> aws_config::ConfigLoader {
    use aws_config::retry::RetryConfig;
    use aws_config::timeout::TimeoutConfig;
    let per_call = per_call.max(std::time::Duration::from_millis(100));
    loader
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(per_call.min(std::time::Duration::from_secs(2)))
                .operation_attempt_timeout(per_call / 2)
                .operation_timeout(per_call)
                .build(),
        )
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(3)
                .with_initial_backoff(per_call / 20)
                .with_max_backoff(per_call / 4),
        )
}

/// Maps an SDK error to an evidence-source error: access problems name the
/// IAM action to grant; throttling, timeouts and server errors are retryable.
pub(crate) fn sdk_failure<E, R>(
    source_name: &'static str,
    iam_action: &str,
    error: &SdkError<E, R>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let (retryable, reason) = match error {
        SdkError::ServiceError(service) => {
            let err = service.err();
            let code = err.code().unwrap_or("Unknown");
            let message = err.message().unwrap_or("");
            match code {
                "AccessDenied"
                | "AccessDeniedException"
                | "UnauthorizedOperation"
                | "AuthorizationError" => (
                    false,
                    format!("access denied ({code}): grant {iam_action} to the function's role"),
                ),
                "Throttling"
                | "ThrottlingException"
                | "RequestLimitExceeded"
                | "TooManyRequestsException" => (
                    true,
                    format!("throttled ({code}) after the SDK's retries: {message}"),
                ),
                _ => (false, format!("{code}: {message}")),
            }
        }
        SdkError::TimeoutError(_) => (
            true,
            "timed out (the SDK's attempt or operation timeout)".to_owned(),
        ),
        SdkError::DispatchFailure(_) => (
            true,
            format!(
                "could not reach the endpoint: {}",
                DisplayErrorContext(error)
            ),
        ),
        SdkError::ResponseError(_) => (true, "unreadable response from the service".to_owned()),
        other => (true, DisplayErrorContext(other).to_string()),
    };
    Error::Source {
        source_name,
        reason,
        retryable,
    }
}

/// The error code of a service error, to tell "not found" from a failure.
pub(crate) fn service_error_code<E: ProvideErrorMetadata, R>(
    error: &SdkError<E, R>,
) -> Option<&str> {
    match error {
        SdkError::ServiceError(service) => service.err().code(),
        _ => None,
    }
}

/// Converts an SDK timestamp to chrono.
pub(crate) fn to_chrono(t: &aws_smithy_types::DateTime) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::TimeZone;
    chrono::Utc
        .timestamp_millis_opt(t.to_millis().ok()?)
        .single()
}

/// Converts chrono to an SDK timestamp.
pub(crate) fn to_smithy(t: chrono::DateTime<chrono::Utc>) -> aws_smithy_types::DateTime {
    aws_smithy_types::DateTime::from_millis(t.timestamp_millis())
}

/// The adapters the diagnose function reads AWS through, built once per cold start.
#[derive(Debug, Clone)]
pub struct AwsSources {
    pub cloudwatch: cloudwatch::CloudWatchSource,
    pub elbv2: elbv2::Elbv2Source,
    pub kubernetes: kubernetes::KubeSource,
    pub cloudtrail: cloudtrail::CloudTrailSource,
    /// Where the pods' series come from, chosen once from the configuration.
    pub pod_series: PodSeriesFrom,
    pub logs_insights: logs_insights::LogsInsightsSource,
    /// Masks secrets in every log line the moment it is read; built at the
    /// first line (its patterns were checked with the configuration), so a
    /// diagnosis that reads no log pays nothing for it.
    pub redactor: std::sync::Arc<std::sync::OnceLock<alarm_triage_core::logs::Redactor>>,
    /// `LOG_REDACT`'s extra patterns.
    pub log_redact: Vec<String>,
    /// Sources for other accounts and regions; `None` for sources that read one only.
    pub accounts: Option<std::sync::Arc<accounts::AccountScope>>,
}

impl AwsSources {
    pub fn new(config: &aws_config::SdkConfig, cluster: &crate::config::ClusterSettings) -> Self {
        let prometheus = cluster
            .prometheus_url
            .as_deref()
            .map(|url| {
                kubernetes::PrometheusAccess::direct(
                    url,
                    cluster.prometheus_sigv4_region.as_deref(),
                )
            })
            .or_else(|| {
                cluster
                    .prometheus_service
                    .as_deref()
                    .and_then(kubernetes::PrometheusAccess::service)
            });
        let cloudwatch = cloudwatch::CloudWatchSource::new(aws_sdk_cloudwatch::Client::new(config));
        let kubernetes = kubernetes::KubeSource::new(
            kubernetes::ClusterAccess {
                kubeconfig: cluster.kubeconfig.clone(),
                cluster_name: cluster.cluster_name.clone(),
                eks: aws_sdk_eks::Client::new(config),
                credentials: config.credentials_provider(),
                region: config
                    .region()
                    .map_or_else(|| "us-east-1".to_owned(), |r| r.to_string()),
                timeout: cluster.timeout,
            },
            prometheus,
        );
        // Prometheus when one is configured, else Container Insights.
        let pod_series = if kubernetes.prometheus.is_some() {
            PodSeriesFrom::Prometheus(kubernetes.clone())
        } else {
            PodSeriesFrom::ContainerInsights {
                insights: container_insights::ContainerInsightsSource::new(cloudwatch.clone()),
                cluster_name: cluster.cluster_name.clone(),
            }
        };
        AwsSources {
            accounts: None,
            cloudwatch,
            elbv2: elbv2::Elbv2Source::new(aws_sdk_elasticloadbalancingv2::Client::new(config)),
            kubernetes,
            cloudtrail: cloudtrail::CloudTrailSource::new(aws_sdk_cloudtrail::Client::new(config)),
            pod_series,
            logs_insights: logs_insights::LogsInsightsSource::new(
                aws_sdk_cloudwatchlogs::Client::new(config),
                cluster.log_groups.clone(),
            ),
            redactor: Default::default(),
            log_redact: cluster.log_redact.clone(),
        }
    }
}

/// Where the pods' CPU, throttling and memory series come from.
#[derive(Debug, Clone)]
pub enum PodSeriesFrom {
    /// Prometheus (directly, Amazon Managed Prometheus signed with SigV4, or
    /// through the API server's service proxy: the cluster source holds the access).
    Prometheus(kubernetes::KubeSource),
    /// CloudWatch Container Insights (`FullPodName`), in the cluster the walk
    /// read, else the configured one.
    ContainerInsights {
        insights: container_insights::ContainerInsightsSource,
        cluster_name: Option<String>,
    },
}

impl AwsSources {
    /// The sources a configuration calls for: its own account and region, and
    /// every other through [`accounts::AccountScope`].
    pub fn from_config(aws: &aws_config::SdkConfig, config: &crate::config::Config) -> Self {
        AwsSources::new(aws, &config.cluster).across_accounts(accounts::AccountScope::new(
            aws.clone(),
            config.region.clone(),
            config.cluster.clone(),
            config.organisation.clone(),
        ))
    }

    /// These sources for the home account and region, and through `scope`
    /// for an alarm anywhere else (the member role of its account).
    pub fn across_accounts(self, scope: accounts::AccountScope) -> Self {
        AwsSources {
            accounts: Some(std::sync::Arc::new(scope)),
            ..self
        }
    }
}

impl crate::evidence::AccountScoped for AwsSources {
    async fn scoped_to(
        &self,
        partition: &str,
        account: &str,
        region: &str,
    ) -> std::result::Result<Option<Self>, String> {
        match &self.accounts {
            Some(scope) => scope.sources_for(partition, account, region).await,
            None => Ok(None),
        }
    }
}

/// How the diagnose function publishes: likely transients held first, then
/// each transition once, emails grouped by incident, and the destinations.
pub type Publishing = crate::publish::hold::HoldTransients<
    crate::publish::once::OncePerTransition<
        crate::publish::email::EmailByIncident<Destinations, dynamodb::DynamoDbThreads>,
        dynamodb::DynamoDbTransitions,
    >,
    sqs::SqsHoldQueue,
>;

/// The publishing chain the configuration asks for.
pub fn publishing(aws: &aws_config::SdkConfig, config: &crate::config::Config) -> Publishing {
    let hold_seconds = config.hold.as_ref().map_or(0, |h| h.seconds);
    let email = crate::publish::email::EmailByIncident {
        inner: Destinations::new(
            aws,
            config.diagnosis_topic_arn.clone(),
            config.diagnosis_queue_url.clone(),
        ),
        incidents: config
            .email_incidents
            .as_ref()
            .map(|e| dynamodb::DynamoDbThreads::new(aws, e.table.clone())),
        window: config
            .email_incidents
            .as_ref()
            .map_or(chrono::Duration::minutes(30), |e| e.window),
        hold_seconds,
    };
    crate::publish::hold::HoldTransients {
        inner: crate::publish::once::OncePerTransition {
            inner: email,
            ledger: config
                .transitions_table
                .clone()
                .map(|table| dynamodb::DynamoDbTransitions::new(aws, table)),
        },
        queue: config
            .hold
            .as_ref()
            .map(|h| sqs::SqsHoldQueue::new(aws_sdk_sqs::Client::new(aws), h.queue_url.clone())),
        seconds: hold_seconds,
    }
}

/// The diagnosis destinations: the SNS topic and/or the SQS queue.
#[derive(Debug, Clone, Default)]
pub struct Destinations {
    pub topic: Option<sns::SnsPublisher>,
    pub queue: Option<sqs::SqsPublisher>,
}

impl Destinations {
    pub fn new(
        config: &aws_config::SdkConfig,
        topic_arn: Option<String>,
        queue_url: Option<String>,
    ) -> Self {
        Destinations {
            topic: topic_arn
                .map(|arn| sns::SnsPublisher::new(aws_sdk_sns::Client::new(config), arn)),
            queue: queue_url
                .map(|url| sqs::SqsPublisher::new(aws_sdk_sqs::Client::new(config), url)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.topic.is_none() && self.queue.is_none()
    }
}

impl crate::publish::DiagnosisPublisher for Destinations {
    fn enabled(&self) -> bool {
        !self.is_empty()
    }

    /// The queue first, then the topic; either failing fails the publish, so
    /// that Lambda retries the event. Delivery is at least once, ordered so
    /// that people hear of a diagnosis once: the topic (email, Slack) is only
    /// published after the queue took the message, so a refused queue never
    /// makes a retry send a second email. When the topic fails after the
    /// queue took it, the retry sends the queue message again with the same
    /// diagnosis id (a FIFO queue drops it; other consumers deduplicate by id).
    async fn publish(&self, outgoing: &crate::publish::Outgoing) -> crate::Result<Vec<String>> {
        let mut published = Vec::with_capacity(2);
        if let Some(queue) = &self.queue {
            published.push(format!("sqs:{}", queue.send(outgoing).await?));
        }
        if let Some(topic) = &self.topic {
            published.push(format!("sns:{}", topic.publish(outgoing).await?));
        }
        Ok(published)
    }
}

mod delegation {
    //! `AwsSources` answers every port by handing the call to the adapter for that service.

    use std::collections::BTreeMap;

    use chrono::{DateTime, Utc};

    use super::AwsSources;
    use crate::error::Result;
    use crate::evidence::model::{
        AlarmDefinition, LoadBalancer, MetricQuery, MetricSeries, Tags, TargetGroup,
        TargetGroupAttributes, TargetHealth,
    };
    use crate::evidence::workload::{
        PodSeries, PodsListed, TargetGroupBindings, Workload, WorkloadTarget,
    };
    use crate::evidence::{
        AlarmSource, KubernetesSource, LoadBalancerSource, MetricSource, PodSeriesSource,
    };
    use crate::history::AlarmHistory;

    impl AlarmSource for AwsSources {
        async fn state_history(
            &self,
            name: &str,
            start: DateTime<Utc>,
            end: DateTime<Utc>,
        ) -> Result<AlarmHistory> {
            self.cloudwatch.state_history(name, start, end).await
        }

        async fn definition(&self, name: &str) -> Result<Option<AlarmDefinition>> {
            self.cloudwatch.definition(name).await
        }
    }

    impl MetricSource for AwsSources {
        async fn metric_data(
            &self,
            queries: &[MetricQuery],
            start: DateTime<Utc>,
            end: DateTime<Utc>,
        ) -> Result<Vec<MetricSeries>> {
            self.cloudwatch.metric_data(queries, start, end).await
        }
    }

    impl LoadBalancerSource for AwsSources {
        async fn load_balancer(&self, dimension: &str) -> Result<Option<LoadBalancer>> {
            self.elbv2.load_balancer(dimension).await
        }

        async fn target_groups(&self, arn: &str) -> Result<Option<Vec<TargetGroup>>> {
            self.elbv2.target_groups(arn).await
        }

        async fn attributes(&self, arn: &str) -> Result<TargetGroupAttributes> {
            self.elbv2.attributes(arn).await
        }

        async fn target_health(&self, arn: &str) -> Result<Vec<TargetHealth>> {
            self.elbv2.target_health(arn).await
        }

        async fn tags(&self, arns: &[String]) -> Result<BTreeMap<String, Tags>> {
            self.elbv2.tags(arns).await
        }
    }

    impl KubernetesSource for AwsSources {
        async fn prepare(&self) -> Result<()> {
            self.kubernetes.prepare().await
        }

        async fn target_group_bindings(&self) -> Result<Option<TargetGroupBindings>> {
            self.kubernetes.target_group_bindings().await
        }

        async fn workload(
            &self,
            target: &WorkloadTarget,
            pods_listed: crate::evidence::ports::PodsListedSender,
        ) -> Result<Workload> {
            self.kubernetes.workload(target, pods_listed).await
        }
    }

    impl crate::evidence::AuditTrailSource for AwsSources {
        async fn trail_events(
            &self,
            lookup: crate::evidence::changes::TrailLookup,
            start: DateTime<Utc>,
            end: DateTime<Utc>,
        ) -> Result<crate::evidence::changes::TrailPage> {
            self.cloudtrail.trail_events(lookup, start, end).await
        }
    }

    impl PodSeriesSource for AwsSources {
        async fn pod_series(
            &self,
            pods: &PodsListed,
            start: DateTime<Utc>,
            end: DateTime<Utc>,
            step_seconds: u32,
        ) -> Result<PodSeries> {
            self.pod_series
                .pod_series(pods, start, end, step_seconds)
                .await
        }
    }

    impl crate::evidence::LogSource for AwsSources {
        async fn container_log(
            &self,
            pods: &PodsListed,
            request: &crate::evidence::logs::LogRequest,
            window: crate::evidence::logs::LogWindow,
            limit_bytes: usize,
        ) -> Result<crate::evidence::logs::ContainerLog> {
            let mut log = self
                .kubernetes
                .container_log(pods, request, window, limit_bytes)
                .await?;
            self.redact(&mut log);
            Ok(log)
        }

        async fn workload_logs(
            &self,
            pods: &PodsListed,
            window: crate::evidence::logs::LogWindow,
            limit_bytes: usize,
        ) -> Result<Option<Vec<crate::evidence::logs::ContainerLog>>> {
            let cluster = self.kubernetes.cluster_of(pods);
            let mut logs = self
                .logs_insights
                .workload_logs(pods, cluster.as_deref(), window, limit_bytes)
                .await?;
            for log in logs.iter_mut().flatten() {
                self.redact(log);
            }
            Ok(logs)
        }
    }

    impl AwsSources {
        /// Every line, before anything else sees it.
        fn redact(&self, log: &mut crate::evidence::logs::ContainerLog) {
            if log.lines.is_empty() {
                return;
            }
            // The patterns were checked when the configuration was read.
            let redactor = self.redactor.get_or_init(|| {
                alarm_triage_core::logs::Redactor::with_extra(&self.log_redact).unwrap_or_default()
            });
            for line in &mut log.lines {
                if let std::borrow::Cow::Owned(clean) = redactor.redact(&line.text) {
                    line.text = clean;
                }
            }
        }
    }

    impl PodSeriesSource for super::PodSeriesFrom {
        async fn pod_series(
            &self,
            pods: &PodsListed,
            start: DateTime<Utc>,
            end: DateTime<Utc>,
            step_seconds: u32,
        ) -> Result<PodSeries> {
            match self {
                super::PodSeriesFrom::Prometheus(cluster) => {
                    cluster.pod_series(pods, start, end, step_seconds).await
                }
                super::PodSeriesFrom::ContainerInsights {
                    insights,
                    cluster_name,
                } => {
                    let Some(cluster) = pods.cluster.clone().or_else(|| cluster_name.clone())
                    else {
                        return Err(crate::Error::Source {
                            source_name: crate::evidence::source::POD_SERIES,
                            reason: "no Prometheus configured and no cluster name for Container Insights (set PROMETHEUS_URL, PROMETHEUS_SERVICE or EKS_CLUSTER_NAME)".to_owned(),
                            retryable: false,
                        });
                    };
                    insights
                        .pod_series(&cluster, pods, start, end, step_seconds)
                        .await
                }
            }
        }
    }
}
