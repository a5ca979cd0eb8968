//! Typed configuration read once from the environment. A missing or invalid
//! variable fails the cold start with its name, instead of failing later.

use std::time::Duration;

use crate::classify::ClassifierConfig;
use crate::error::{Error, Result};
use crate::evidence::Budget;

/// Settings of the diagnose function and of `alarm-triage replay`.
#[derive(Debug, Clone)]
pub struct Config {
    pub region: String,
    pub classifier: ClassifierConfig,
    pub budget: Budget,
    /// Time kept back from the invocation deadline for publishing.
    pub publish_margin: Duration,
    /// Where diagnoses go: an SNS topic and/or an SQS queue.
    pub diagnosis_topic_arn: Option<String>,
    pub diagnosis_queue_url: Option<String>,
    pub cluster: ClusterSettings,
    /// Alarms of other accounts are read through a role there, when set.
    pub organisation: Option<Organisation>,
    /// `TRANSITIONS_TABLE`: the DynamoDB table that makes each transition
    /// published once when SNS and EventBridge both deliver it.
    pub transitions_table: Option<String>,
    /// `HOLD_TRANSIENT_SECONDS` and `HOLD_QUEUE_URL`: likely transients wait this long before they are published.
    pub hold: Option<HoldSettings>,
    /// `EMAIL_INCIDENT_TABLE` and `INCIDENT_WINDOW_MINUTES`: one email per incident per window.
    pub email_incidents: Option<EmailIncidentSettings>,
}

/// Holding likely transients: a delay queue the function reads back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldSettings {
    pub seconds: u32,
    pub queue_url: String,
}

/// Grouping emails by incident.
#[derive(Debug, Clone, PartialEq)]
pub struct EmailIncidentSettings {
    pub table: String,
    pub window: chrono::Duration,
}

fn hold(lookup: &impl Fn(&str) -> Option<String>) -> Result<Option<HoldSettings>> {
    let max = alarm_triage_core::diagnosis::hold::MAX_HOLD_SECONDS;
    let seconds = parse(lookup, "HOLD_TRANSIENT_SECONDS", 0u32, 0, max)?;
    if seconds == 0 {
        return Ok(None);
    }
    let queue_url = non_empty(lookup, "HOLD_QUEUE_URL").ok_or_else(|| Error::Config {
        variable: "HOLD_QUEUE_URL",
        problem: format!(
            "is not set, but HOLD_TRANSIENT_SECONDS is {seconds}: set it to the hold queue's URL (the template's HoldQueue), or set HOLD_TRANSIENT_SECONDS=0"
        ),
    })?;
    Ok(Some(HoldSettings { seconds, queue_url }))
}

fn email_incidents(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<Option<EmailIncidentSettings>> {
    let minutes = parse(lookup, "INCIDENT_WINDOW_MINUTES", 30i64, 0, 24 * 60)?;
    Ok(non_empty(lookup, "EMAIL_INCIDENT_TABLE")
        .filter(|_| minutes > 0)
        .map(|table| EmailIncidentSettings {
            table,
            window: chrono::Duration::minutes(minutes),
        }))
}

/// One bot for many accounts: the function's own account, and the role it
/// assumes in every other account to read an alarm's evidence there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Organisation {
    /// `HOME_ACCOUNT_ID`: alarms of this account are read with the function's own credentials.
    pub home_account: String,
    /// `MEMBER_ROLE_NAME`: the read-only role in each member account (`AlarmTriageReader`).
    pub member_role_name: String,
}

impl Organisation {
    /// The member role's ARN in `account`.
    pub fn role_arn(&self, partition: &str, account: &str) -> String {
        format!(
            "arn:{partition}:iam::{account}:role/{}",
            self.member_role_name
        )
    }
}

fn organisation(lookup: &impl Fn(&str) -> Option<String>) -> Result<Option<Organisation>> {
    let role = non_empty(lookup, "MEMBER_ROLE_NAME");
    let home = non_empty(lookup, "HOME_ACCOUNT_ID");
    match (role, home) {
        (None, _) => Ok(None),
        (Some(_), None) => Err(Error::Config {
            variable: "HOME_ACCOUNT_ID",
            problem: "is not set, but MEMBER_ROLE_NAME is: set it to the function's own account (12 digits) so that alarms of other accounts are read through the member role".to_owned(),
        }),
        (Some(role), Some(home)) if home.len() == 12 && home.bytes().all(|b| b.is_ascii_digit()) => {
            if role.is_empty() || role.contains([':', '/', '*']) {
                return Err(Error::Config {
                    variable: "MEMBER_ROLE_NAME",
                    problem: format!("is {role:?}; expected a role name such as AlarmTriageReader (no ARN, no path)"),
                });
            }
            Ok(Some(Organisation {
                home_account: home,
                member_role_name: role,
            }))
        }
        (Some(_), Some(home)) => Err(Error::Config {
            variable: "HOME_ACCOUNT_ID",
            problem: format!("is {home:?}; expected a 12-digit AWS account id"),
        }),
    }
}

/// How to reach the cluster and its Prometheus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterSettings {
    /// `EKS_CLUSTER_NAME`; without it, the target group's `elbv2.k8s.aws/cluster` tag names the cluster.
    pub cluster_name: Option<String>,
    /// `KUBECONFIG` (a single path): for local runs instead of the EKS endpoint and token.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// `PROMETHEUS_URL`: Prometheus reached directly.
    pub prometheus_url: Option<String>,
    /// `PROMETHEUS_SIGV4_REGION`: sign the queries to `PROMETHEUS_URL` with SigV4
    /// (service `aps`) for this region; an AMP workspace URL implies its own.
    pub prometheus_sigv4_region: Option<String>,
    /// `PROMETHEUS_SERVICE=namespace/name:port`: an in-cluster Prometheus through the API server's service proxy.
    pub prometheus_service: Option<String>,
    /// `KUBE_TIMEOUT_MS`: connect and read timeout of every Kubernetes and Prometheus call.
    pub timeout: Duration,
    /// `LOG_GROUPS` (comma-separated): where the cluster ships container logs,
    /// for Logs Insights; else Container Insights' `/aws/containerinsights/<cluster>/application`.
    pub log_groups: Vec<String>,
    /// `LOG_REDACT`: a JSON array of extra regexes whose matches are masked in
    /// every log line read, on top of the built-in secrets and personal data.
    pub log_redact: Vec<String>,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads from any lookup (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let region = region(&lookup)?;
        let defaults = ClassifierConfig::default();
        let classifier = ClassifierConfig {
            lookback_seconds: parse(
                &lookup,
                "TRIAGE_LOOKBACK_HOURS",
                defaults.lookback_seconds / 3600,
                1,
                24 * 14,
            )? * 3600,
            flap_window_seconds: parse(
                &lookup,
                "TRIAGE_FLAP_WINDOW_HOURS",
                defaults.flap_window_seconds / 3600,
                1,
                24,
            )? * 3600,
            flap_start_percent: parse(
                &lookup,
                "TRIAGE_FLAP_START_PERCENT",
                defaults.flap_start_percent,
                1.0,
                100.0,
            )?,
            flap_stop_percent: parse(
                &lookup,
                "TRIAGE_FLAP_STOP_PERCENT",
                defaults.flap_stop_percent,
                0.0,
                100.0,
            )?,
            sustained_after_seconds: parse(
                &lookup,
                "TRIAGE_SUSTAINED_AFTER_SECONDS",
                defaults.sustained_after_seconds,
                60,
                24 * 3600,
            )?,
            ..defaults
        };
        if classifier.flap_stop_percent > classifier.flap_start_percent {
            return Err(Error::Config {
                variable: "TRIAGE_FLAP_STOP_PERCENT",
                problem: format!(
                    "is {} but must not exceed TRIAGE_FLAP_START_PERCENT ({}), or hysteresis is inverted",
                    classifier.flap_stop_percent, classifier.flap_start_percent
                ),
            });
        }
        let per_source_ms = parse(&lookup, "TRIAGE_SOURCE_TIMEOUT_MS", 8_000u64, 100, 60_000)?;
        let margin_ms = parse(&lookup, "TRIAGE_PUBLISH_MARGIN_MS", 3_000u64, 0, 60_000)?;
        Ok(Config {
            region,
            budget: Budget {
                per_source: Duration::from_millis(per_source_ms),
                publish: Duration::from_millis(margin_ms),
                lookback: chrono::Duration::seconds(
                    i64::try_from(classifier.lookback_seconds).unwrap_or(86_400),
                ),
                ..Budget::default()
            },
            classifier,
            publish_margin: Duration::from_millis(margin_ms),
            diagnosis_topic_arn: non_empty(&lookup, "DIAGNOSIS_TOPIC_ARN"),
            diagnosis_queue_url: non_empty(&lookup, "DIAGNOSIS_QUEUE_URL"),
            organisation: organisation(&lookup)?,
            transitions_table: non_empty(&lookup, "TRANSITIONS_TABLE"),
            hold: hold(&lookup)?,
            email_incidents: email_incidents(&lookup)?,
            cluster: ClusterSettings {
                cluster_name: non_empty(&lookup, "EKS_CLUSTER_NAME"),
                kubeconfig: non_empty(&lookup, "KUBECONFIG").map(std::path::PathBuf::from),
                prometheus_url: non_empty(&lookup, "PROMETHEUS_URL"),
                prometheus_sigv4_region: non_empty(&lookup, "PROMETHEUS_SIGV4_REGION"),
                prometheus_service: match non_empty(&lookup, "PROMETHEUS_SERVICE") {
                    Some(s) if !s.contains('/') || !s.contains(':') => {
                        return Err(Error::Config {
                            variable: "PROMETHEUS_SERVICE",
                            problem: format!(
                                "is {s:?}; expected namespace/name:port (e.g. monitoring/prometheus-server:9090)"
                            ),
                        });
                    }
                    other => other,
                },
                timeout: Duration::from_millis(parse(
                    &lookup,
                    "KUBE_TIMEOUT_MS",
                    3_000u64,
                    100,
                    30_000,
                )?),
                log_groups: non_empty(&lookup, "LOG_GROUPS")
                    .map(|v| {
                        v.split(',')
                            .map(|g| g.trim().to_owned())
                            .filter(|g| !g.is_empty())
                            .collect()
                    })
                    .unwrap_or_default(),
                log_redact: log_redact(&lookup)?,
            },
        })
    }

    /// The diagnose function must publish somewhere: fails, naming both variables, when neither is set.
    pub fn require_destination(self) -> Result<Self> {
        if self.diagnosis_topic_arn.is_none() && self.diagnosis_queue_url.is_none() {
            return Err(Error::Config {
                variable: "DIAGNOSIS_TOPIC_ARN",
                problem: "is not set, and neither is DIAGNOSIS_QUEUE_URL; set one or both so diagnoses are published".to_owned(),
            });
        }
        if let Some(arn) = &self.diagnosis_topic_arn
            && (!arn.starts_with("arn:") || arn.split(':').count() != 6)
        {
            return Err(Error::Config {
                variable: "DIAGNOSIS_TOPIC_ARN",
                problem: format!(
                    "is {arn:?}; expected an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)"
                ),
            });
        }
        Ok(self)
    }

    /// The budget for an invocation with `remaining` time before its deadline.
    pub fn budget_for(&self, remaining: Duration) -> Budget {
        Budget {
            overall: remaining.saturating_sub(self.publish_margin),
            ..self.budget
        }
    }
}

fn region(lookup: &impl Fn(&str) -> Option<String>) -> Result<String> {
    lookup("AWS_REGION")
        .or_else(|| lookup("AWS_DEFAULT_REGION"))
        .filter(|r| !r.trim().is_empty())
        .ok_or(Error::Config {
            variable: "AWS_REGION",
            problem: "is not set; expected a region code such as eu-west-1".to_owned(),
        })
}

/// Where the Slack webhook URL(s) or bot token are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretLocation {
    /// `SLACK_SECRET_ID`: a Secrets Manager secret (name or ARN).
    SecretsManager(String),
    /// `SLACK_SECRET_PARAMETER`: an SSM SecureString parameter (name or ARN).
    SsmParameter(String),
}

impl std::fmt::Display for SecretLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretLocation::SecretsManager(id) => write!(f, "Secrets Manager secret {id}"),
            SecretLocation::SsmParameter(name) => write!(f, "SSM parameter {name}"),
        }
    }
}

/// Settings of the notify-slack function.
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    pub region: String,
    pub secret: SecretLocation,
    /// `SLACK_ROUTES` as given (parsed into routes by [`crate::notify::route::Routes`]).
    pub routes: crate::notify::route::Routes,
    /// `SLACK_CHANNEL`: where everything goes without `SLACK_ROUTES`.
    pub default_channel: Option<String>,
    /// `SLACK_THREAD_TABLE`: the DynamoDB table threads are remembered in (bot token only).
    pub thread_table: Option<String>,
    /// `FEEDBACK_TABLE`: record diagnoses and put verdict buttons on them (bot token only).
    pub feedback_table: Option<String>,
    /// `HOLD_TRANSIENT_SECONDS` (as the diagnose function has it): a resolution
    /// of an alarm shorter than the hold only replies where a thread exists.
    pub hold_transient_seconds: u32,
    /// `INCIDENT_WINDOW_MINUTES` (default 30, 0 turns incidents off): alarms
    /// about one culprit within it share one thread (bot token and thread table).
    pub incident_window: Option<chrono::Duration>,
    /// `SLACK_THREAD_HOURS`: how long later reports go under the first one.
    pub thread_lifetime: chrono::Duration,
    /// `SLACK_API_URL`: the Web API's base URL.
    pub api_url: String,
    /// `SLACK_TIMEOUT_MS`: timeout of one request to Slack.
    pub request_timeout: Duration,
    /// `SLACK_DEADLINE_MARGIN_MS`: no retry is started this close to the invocation's deadline.
    pub deadline_margin: Duration,
    /// `SLACK_CHARTS` (`on`, the default, or `off`): upload charts into the thread (bot token only).
    pub charts: bool,
}

impl NotifyConfig {
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let region = region(&lookup)?;
        let secret = slack_secret(&lookup)?;
        let default_channel = non_empty(&lookup, "SLACK_CHANNEL");
        let routes = crate::notify::route::Routes::parse(
            lookup(crate::notify::route::ROUTES_VARIABLE).as_deref(),
            default_channel
                .as_deref()
                .unwrap_or(crate::notify::credentials::DEFAULT_WEBHOOK),
        )?;
        let api_url = slack_api_url(&lookup)?;
        Ok(NotifyConfig {
            region,
            secret,
            routes,
            default_channel,
            thread_table: non_empty(&lookup, "SLACK_THREAD_TABLE"),
            feedback_table: non_empty(&lookup, "FEEDBACK_TABLE"),
            hold_transient_seconds: parse(
                &lookup,
                "HOLD_TRANSIENT_SECONDS",
                0u32,
                0,
                alarm_triage_core::diagnosis::hold::MAX_HOLD_SECONDS,
            )?,
            incident_window: match parse(&lookup, "INCIDENT_WINDOW_MINUTES", 30i64, 0, 24 * 60)? {
                0 => None,
                minutes => Some(chrono::Duration::minutes(minutes)),
            },
            thread_lifetime: chrono::Duration::hours(parse(
                &lookup,
                "SLACK_THREAD_HOURS",
                24i64,
                1,
                24 * 30,
            )?),
            api_url,
            request_timeout: Duration::from_millis(parse(
                &lookup,
                "SLACK_TIMEOUT_MS",
                5_000u64,
                100,
                60_000,
            )?),
            deadline_margin: Duration::from_millis(parse(
                &lookup,
                "SLACK_DEADLINE_MARGIN_MS",
                1_000u64,
                0,
                60_000,
            )?),
            charts: match non_empty(&lookup, "SLACK_CHARTS").as_deref() {
                None | Some("on") => true,
                Some("off") => false,
                Some(other) => {
                    return Err(Error::Config {
                        variable: "SLACK_CHARTS",
                        problem: format!("is {other:?}; expected on or off"),
                    });
                }
            },
        })
    }
}

/// `SLACK_SECRET_ID` or `SLACK_SECRET_PARAMETER`: exactly one.
fn slack_secret(lookup: &impl Fn(&str) -> Option<String>) -> Result<SecretLocation> {
    Ok(
        match (
            non_empty(lookup, "SLACK_SECRET_ID"),
            non_empty(lookup, "SLACK_SECRET_PARAMETER"),
        ) {
            (Some(id), None) => SecretLocation::SecretsManager(id),
            (None, Some(name)) => SecretLocation::SsmParameter(name),
            (None, None) => {
                return Err(Error::Config {
                variable: "SLACK_SECRET_ID",
                problem: "is not set, and neither is SLACK_SECRET_PARAMETER; name the Secrets Manager secret or the SSM SecureString that holds the webhook URL or bot token".to_owned(),
            });
            }
            (Some(_), Some(_)) => {
                return Err(Error::Config {
                    variable: "SLACK_SECRET_ID",
                    problem: "and SLACK_SECRET_PARAMETER are both set; expected exactly one"
                        .to_owned(),
                });
            }
        },
    )
}

/// Settings of the feedback function (the Slack interactivity endpoint).
#[derive(Debug, Clone)]
pub struct FeedbackConfig {
    pub region: String,
    /// The Slack secret: `bot_token` and `signing_secret`.
    pub secret: SecretLocation,
    /// `FEEDBACK_TABLE`: where diagnoses and answers are kept.
    pub table: String,
    /// `SLACK_API_URL`: the Web API's base URL.
    pub api_url: String,
}

impl FeedbackConfig {
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        Ok(FeedbackConfig {
            region: region(&lookup)?,
            secret: slack_secret(&lookup)?,
            table: non_empty(&lookup, "FEEDBACK_TABLE").ok_or_else(|| Error::Config {
                variable: "FEEDBACK_TABLE",
                problem: "is not set; name the DynamoDB table that keeps diagnoses and answers"
                    .to_owned(),
            })?,
            api_url: slack_api_url(&lookup)?,
        })
    }
}

/// Settings of the digest function (the scheduled noise digest in Slack).
#[derive(Debug, Clone)]
pub struct DigestConfig {
    pub region: String,
    pub secret: SecretLocation,
    /// `DIGEST_CHANNEL` (else `SLACK_CHANNEL`; with webhooks the key of one,
    /// else the single webhook).
    pub channel: String,
    /// `DIGEST_DAYS` (default 7, at most 63: CloudWatch's 5-minute datapoints).
    pub days: i64,
    /// `DIGEST_ALARM_PREFIX`: only alarms whose names start with it.
    pub prefix: Option<String>,
    /// `SLACK_THREAD_TABLE`: the seen-before records, to count diagnoses with no cause.
    pub thread_table: Option<String>,
    pub api_url: String,
    pub request_timeout: Duration,
}

impl DigestConfig {
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        Ok(DigestConfig {
            region: region(&lookup)?,
            secret: slack_secret(&lookup)?,
            channel: non_empty(&lookup, "DIGEST_CHANNEL")
                .or_else(|| non_empty(&lookup, "SLACK_CHANNEL"))
                .unwrap_or_else(|| crate::notify::credentials::DEFAULT_WEBHOOK.to_owned()),
            days: parse(&lookup, "DIGEST_DAYS", 7i64, 1, 63)?,
            prefix: non_empty(&lookup, "DIGEST_ALARM_PREFIX"),
            thread_table: non_empty(&lookup, "SLACK_THREAD_TABLE"),
            api_url: slack_api_url(&lookup)?,
            request_timeout: Duration::from_millis(parse(
                &lookup,
                "SLACK_TIMEOUT_MS",
                5_000u64,
                100,
                60_000,
            )?),
        })
    }
}

/// `SLACK_API_URL`, https (plain http on loopback only).
fn slack_api_url(lookup: &impl Fn(&str) -> Option<String>) -> Result<String> {
    let api_url = non_empty(lookup, "SLACK_API_URL")
        .unwrap_or_else(|| "https://slack.com/api".to_owned())
        .trim_end_matches('/')
        .to_owned();
    crate::notify::credentials::check_url(&api_url).map_err(|problem| Error::Config {
        variable: "SLACK_API_URL",
        problem: format!("is {api_url:?}: {problem}"),
    })?;
    Ok(api_url)
}

/// `LOG_REDACT`: a JSON array of regexes, each checked to compile now, so a
/// typo fails the cold start instead of letting a secret through.
fn log_redact(lookup: &impl Fn(&str) -> Option<String>) -> Result<Vec<String>> {
    let Some(raw) = non_empty(lookup, "LOG_REDACT") else {
        return Ok(Vec::new());
    };
    let invalid = |problem: String| Error::Config {
        variable: "LOG_REDACT",
        problem,
    };
    let patterns: Vec<String> = serde_json::from_str(&raw).map_err(|e| {
        invalid(format!(
            "is not a JSON array of strings ({e}); expected for example [\"cust-[0-9]{{8}}\"]"
        ))
    })?;
    alarm_triage_core::logs::Redactor::with_extra(&patterns).map_err(|e| invalid(e.to_string()))?;
    Ok(patterns)
}

fn non_empty(lookup: &impl Fn(&str) -> Option<String>, variable: &str) -> Option<String> {
    lookup(variable)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

fn parse<T>(
    lookup: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    default: T,
    min: T,
    max: T,
) -> Result<T>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let Some(raw) = lookup(variable) else {
        return Ok(default);
    };
    let value: T = raw.trim().parse().map_err(|_| Error::Config {
        variable,
        problem: format!("is {raw:?}; expected a number between {min} and {max}"),
    })?;
    if value < min || value > max {
        return Err(Error::Config {
            variable,
            problem: format!("is {value}; expected a number between {min} and {max}"),
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn a_member_role_without_the_home_account_is_refused_by_name() {
        let err = Config::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("MEMBER_ROLE_NAME", "AlarmTriageReader"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("HOME_ACCOUNT_ID"), "{err}");
    }

    #[test]
    fn a_member_role_with_the_home_account_reads_other_accounts_through_it() {
        let config = Config::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("MEMBER_ROLE_NAME", "AlarmTriageReader"),
            ("HOME_ACCOUNT_ID", "111122223333"),
        ]))
        .unwrap();
        let organisation = config.organisation.unwrap();
        assert_eq!(
            organisation.role_arn("aws", "444455556666"),
            "arn:aws:iam::444455556666:role/AlarmTriageReader"
        );
    }

    #[test]
    fn a_role_arn_where_a_role_name_belongs_is_refused() {
        let err = Config::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("MEMBER_ROLE_NAME", "arn:aws:iam::1:role/x"),
            ("HOME_ACCOUNT_ID", "111122223333"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("MEMBER_ROLE_NAME"), "{err}");
    }

    #[test]
    fn a_missing_region_is_named() {
        let err = Config::from_lookup(lookup(&[])).unwrap_err();
        assert!(err.to_string().contains("AWS_REGION"), "{err}");
    }

    #[test]
    fn a_malformed_number_names_the_variable_and_the_value() {
        let err = Config::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("TRIAGE_FLAP_START_PERCENT", "lots"),
        ]))
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("TRIAGE_FLAP_START_PERCENT") && text.contains("lots"),
            "{text}"
        );
    }

    #[test]
    fn inverted_hysteresis_is_refused() {
        let err = Config::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("TRIAGE_FLAP_START_PERCENT", "10"),
            ("TRIAGE_FLAP_STOP_PERCENT", "20"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("hysteresis"));
    }

    #[test]
    fn the_function_needs_a_topic_or_a_queue() {
        let bare = Config::from_lookup(lookup(&[("AWS_REGION", "eu-west-1")])).unwrap();
        let err = bare.require_destination().unwrap_err().to_string();
        assert!(
            err.contains("DIAGNOSIS_TOPIC_ARN") && err.contains("DIAGNOSIS_QUEUE_URL"),
            "{err}"
        );
        let queue = Config::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("DIAGNOSIS_QUEUE_URL", "http://q"),
        ]))
        .unwrap();
        assert!(queue.require_destination().is_ok());
        let bad = Config::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("DIAGNOSIS_TOPIC_ARN", "my-topic"),
        ]))
        .unwrap();
        assert!(
            bad.require_destination()
                .unwrap_err()
                .to_string()
                .contains("my-topic")
        );
    }

    #[test]
    fn notify_needs_exactly_one_secret_location() {
        let err = NotifyConfig::from_lookup(lookup(&[("AWS_REGION", "eu-west-1")])).unwrap_err();
        assert!(err.to_string().contains("SLACK_SECRET_PARAMETER"), "{err}");
        let both = NotifyConfig::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("SLACK_SECRET_ID", "a"),
            ("SLACK_SECRET_PARAMETER", "/b"),
        ]));
        assert!(both.is_err());
        let ssm = NotifyConfig::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("SLACK_SECRET_PARAMETER", "/alarm-triage/slack"),
        ]))
        .unwrap();
        assert_eq!(
            ssm.secret,
            SecretLocation::SsmParameter("/alarm-triage/slack".into())
        );
        assert_eq!(ssm.api_url, "https://slack.com/api");
    }

    #[test]
    fn a_plain_http_slack_api_url_is_refused_off_loopback() {
        let err = NotifyConfig::from_lookup(lookup(&[
            ("AWS_REGION", "eu-west-1"),
            ("SLACK_SECRET_ID", "a"),
            ("SLACK_API_URL", "http://slack.example.com/api"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("SLACK_API_URL"), "{err}");
    }

    #[test]
    fn charts_are_on_unless_turned_off_and_a_typo_names_the_variable() {
        let with = |value: Option<&str>| {
            let mut vars = vec![("AWS_REGION", "eu-west-1"), ("SLACK_SECRET_ID", "a")];
            vars.extend(value.map(|v| ("SLACK_CHARTS", v)));
            NotifyConfig::from_lookup(lookup(&vars))
        };
        assert!(with(None).unwrap().charts);
        assert!(!with(Some("off")).unwrap().charts);
        let err = with(Some("no")).unwrap_err().to_string();
        assert!(
            err.contains("SLACK_CHARTS") && err.contains("expected on or off"),
            "{err}"
        );
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let config = Config::from_lookup(lookup(&[("AWS_REGION", "eu-west-1")])).unwrap();
        assert_eq!(config.classifier, ClassifierConfig::default());
        assert_eq!(
            config.budget_for(Duration::from_secs(10)).overall,
            Duration::from_secs(7)
        );
    }

    #[test]
    fn log_redact_takes_a_json_array_of_regexes_and_names_a_bad_one() {
        let base = |extra: &'static str| {
            move |name: &str| match name {
                "AWS_REGION" => Some("eu-west-1".to_owned()),
                "LOG_REDACT" => Some(extra.to_owned()),
                "LOG_GROUPS" => Some("/eks/app, /eks/batch".to_owned()),
                _ => None,
            }
        };
        let ok = Config::from_lookup(base(r#"["cust-[0-9]{8}"]"#)).map(|c| c.cluster);
        assert!(
            matches!(&ok, Ok(c) if c.log_redact == ["cust-[0-9]{8}"] && c.log_groups == ["/eks/app", "/eks/batch"])
        );
        let not_json = Config::from_lookup(base("cust-[0-9]{8}")).map(|_| ());
        assert!(
            matches!(&not_json, Err(Error::Config { variable: "LOG_REDACT", problem }) if problem.contains("JSON array")),
            "{not_json:?}"
        );
        let bad_regex = Config::from_lookup(base(r#"["cust-[0-9"]"#)).map(|_| ());
        assert!(
            matches!(&bad_regex, Err(Error::Config { variable: "LOG_REDACT", problem }) if problem.contains("cust-[0-9")),
            "{bad_regex:?}"
        );
    }
}
