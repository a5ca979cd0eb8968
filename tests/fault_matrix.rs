//! The fault matrix: every dependency the bot talks to, times every way it
//! fails, against one local world, through the production paths (the EKS
//! token from eks:DescribeCluster, not a kubeconfig; Prometheus direct).
//!
//! | dependency | each fault must end as |
//! | --- | --- |
//! | CloudWatch, ELBv2, EKS, Kubernetes API, Prometheus | a published diagnosis whose gap names what happened |
//! | SNS, SQS (publishing) | a failed invocation (Lambda retries, nothing lost); people not told before the queue took it |
//! | Slack | a failed invocation: `slack_unavailable` (retried) or `slack_rejected` (kept on failure) |
//!
//! and every case ends within the invocation's deadline. The table of wall
//! times is printed (`cargo test --test fault_matrix -- --nocapture`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use alarm_triage::adapters::cloudwatch::CloudWatchSource;
use alarm_triage::adapters::elbv2::Elbv2Source;
use alarm_triage::adapters::slack::SlackWebhook;
use alarm_triage::adapters::sns::SnsPublisher;
use alarm_triage::adapters::sqs::SqsPublisher;
use alarm_triage::adapters::{AwsSources, Destinations};
use alarm_triage::classify::ClassifierConfig;
use alarm_triage::config::Config;
use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::evidence::{Budget, Collection, source};
use alarm_triage::notify::credentials::SlackCredentials;
use alarm_triage::notify::delivery::{Notifier, RetryPolicy};
use alarm_triage::notify::route::Routes;
use alarm_triage::notify::thread::NoThreads;
use alarm_triage::pipeline::{Now, Outcome, Triage};
use secrecy::SecretString;
use serde_json::{Value, json};
use support::{LocalSlack, LocalWorld, http};

/// The invocation's time: gathering, then publishing; each call at most `PER_CALL`.
const GATHER: Duration = Duration::from_secs(3);
const PUBLISH: Duration = Duration::from_secs(2);
const PER_CALL: Duration = Duration::from_secs(2);
/// Longer than the whole deadline.
const HANG_MS: u64 = 8_000;
/// Scheduling noise allowed on top of the deadline (the machine is shared).
const NOISE: Duration = Duration::from_millis(750);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Dependency {
    CloudWatch,
    Elbv2,
    Eks,
    Kubernetes,
    Prometheus,
    Sns,
    Sqs,
    Slack,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Throttled,
    ServerError,
    AccessDenied,
    Hangs,
    Refused,
}

const DEPENDENCIES: [Dependency; 8] = [
    Dependency::CloudWatch,
    Dependency::Elbv2,
    Dependency::Eks,
    Dependency::Kubernetes,
    Dependency::Prometheus,
    Dependency::Sns,
    Dependency::Sqs,
    Dependency::Slack,
];
const FAULTS: [Fault; 5] = [
    Fault::Throttled,
    Fault::ServerError,
    Fault::AccessDenied,
    Fault::Hangs,
    Fault::Refused,
];

/// A port nothing listens on.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// A rule for moto's fault injector (AWS services).
fn aws_rule(service: &str, operation: &str, fault: Fault) -> Value {
    match fault {
        Fault::Throttled => {
            json!({"service": service, "operation": operation, "status": 400, "code": "Throttling", "message": "Rate exceeded"})
        }
        Fault::ServerError => {
            json!({"service": service, "operation": operation, "status": 500, "code": "InternalFailure", "message": "injected"})
        }
        Fault::AccessDenied => {
            json!({"service": service, "operation": operation, "status": 403, "code": "AccessDenied", "message": "not authorized"})
        }
        Fault::Hangs => json!({"service": service, "operation": operation, "delay_ms": HANG_MS}),
        Fault::Refused => unreachable!("refusals point the client at a closed port"),
    }
}

/// A rule for the Kubernetes API's or the Prometheus proxy's fault knob.
fn http_rule(path: &str, fault: Fault) -> Value {
    match fault {
        Fault::Throttled => json!({"path": path, "status": 429, "retry_after": 1}),
        Fault::ServerError => json!({"path": path, "status": 503}),
        Fault::AccessDenied => json!({"path": path, "status": 403, "reason": "Forbidden"}),
        Fault::Hangs => json!({"path": path, "delay_ms": HANG_MS}),
        Fault::Refused => unreachable!(),
    }
}

/// Words one of which the gap must contain, per fault.
fn expected_words(fault: Fault) -> &'static [&'static str] {
    match fault {
        Fault::Throttled => &["throttled", "429"],
        Fault::ServerError => &["InternalFailure", "503", "500"],
        Fault::AccessDenied => &["access denied", "403"],
        Fault::Hangs => &["no answer", "timed out"],
        Fault::Refused => &["could not reach", "connect", "refused", "dispatch"],
    }
}

/// The gap the fault must show up as.
fn gap_source(dependency: Dependency) -> &'static str {
    match dependency {
        Dependency::CloudWatch => source::ALARM_HISTORY,
        Dependency::Elbv2 => source::TARGET_GROUPS,
        Dependency::Eks => source::CLUSTER,
        Dependency::Kubernetes => source::KUBERNETES,
        Dependency::Prometheus => source::POD_SERIES,
        _ => unreachable!("publishing and Slack have no gaps"),
    }
}

struct Matrix {
    world: LocalWorld,
    event: Vec<u8>,
    slack: LocalSlack,
    diagnosis: Diagnosis,
}

impl Matrix {
    fn clear(&self) {
        http(self.world.endpoint(), "DELETE", "/_alarm_triage/faults", "");
        http(
            self.world.var("KUBE_API_URL"),
            "DELETE",
            "/_alarm_triage/faults",
            "",
        );
        http(
            self.world.var("PROMETHEUS_FAULT_URL"),
            "DELETE",
            "/_alarm_triage/faults",
            "",
        );
        http(&self.slack.url, "POST", "/_recorder/reset", "");
        self.point_eks_at(self.world.var("KUBE_API_URL"));
        self.world.calls(true);
    }

    fn point_eks_at(&self, endpoint: &str) {
        let body =
            json!({"name": self.world.var("EKS_CLUSTER_NAME"), "endpoint": endpoint}).to_string();
        let answer = http(
            self.world.endpoint(),
            "POST",
            "/_alarm_triage/eks-endpoint",
            &body,
        );
        assert!(answer.contains(" 200 "), "{answer}");
    }

    fn inject_http(&self, base: &str, rule: Value) {
        let answer = http(
            base,
            "POST",
            "/_alarm_triage/faults",
            &json!({"rules": [rule]}).to_string(),
        );
        assert!(answer.contains(" 200 "), "{answer}");
    }

    /// Runs the diagnose pipeline as the Lambda does, under the invocation's budget.
    async fn diagnose(&self, dependency: Dependency, fault: Fault) -> (Duration, Outcome) {
        let sdk = self.world.sdk_config_bounded(PER_CALL).await;
        // Production's path to the cluster: EKS_CLUSTER_NAME, DescribeCluster, an EKS token.
        let mut settings = Config::from_lookup(|k| match k {
            "KUBECONFIG" => None,
            "TRIAGE_SOURCE_TIMEOUT_MS" => Some(PER_CALL.as_millis().to_string()),
            "KUBE_TIMEOUT_MS" => Some(PER_CALL.as_millis().to_string()),
            other => self.world.env.get(other).cloned(),
        })
        .unwrap();
        if dependency == Dependency::Prometheus {
            settings.cluster.prometheus_service = None;
            settings.cluster.prometheus_url = Some(match fault {
                Fault::Refused => closed_port(),
                _ => self.world.var("PROMETHEUS_FAULT_URL").to_owned(),
            });
        }
        let mut sources = AwsSources::new(&sdk, &settings.cluster);
        let mut destinations = Destinations::new(
            &sdk,
            settings.diagnosis_topic_arn.clone(),
            settings.diagnosis_queue_url.clone(),
        );
        if fault == Fault::Refused {
            let refused = closed_port();
            match dependency {
                Dependency::CloudWatch => {
                    let conf = aws_sdk_cloudwatch::config::Builder::from(&sdk)
                        .endpoint_url(&refused)
                        .build();
                    sources.cloudwatch =
                        CloudWatchSource::new(aws_sdk_cloudwatch::Client::from_conf(conf));
                }
                Dependency::Elbv2 => {
                    let conf = aws_sdk_elasticloadbalancingv2::config::Builder::from(&sdk)
                        .endpoint_url(&refused)
                        .build();
                    sources.elbv2 =
                        Elbv2Source::new(aws_sdk_elasticloadbalancingv2::Client::from_conf(conf));
                }
                Dependency::Eks => {
                    let conf = aws_sdk_eks::config::Builder::from(&sdk)
                        .endpoint_url(&refused)
                        .build();
                    sources.kubernetes.access.eks = aws_sdk_eks::Client::from_conf(conf);
                }
                Dependency::Kubernetes => self.point_eks_at(&refused),
                Dependency::Sns => {
                    let conf = aws_sdk_sns::config::Builder::from(&sdk)
                        .endpoint_url(&refused)
                        .build();
                    destinations.topic = Some(SnsPublisher::new(
                        aws_sdk_sns::Client::from_conf(conf),
                        settings.diagnosis_topic_arn.clone().unwrap(),
                    ));
                }
                Dependency::Sqs => {
                    let conf = aws_sdk_sqs::config::Builder::from(&sdk)
                        .endpoint_url(&refused)
                        .build();
                    destinations.queue = Some(SqsPublisher::new(
                        aws_sdk_sqs::Client::from_conf(conf),
                        settings.diagnosis_queue_url.clone().unwrap(),
                    ));
                }
                Dependency::Prometheus | Dependency::Slack => {}
            }
        } else {
            match dependency {
                Dependency::CloudWatch => {
                    self.world
                        .inject(json!([aws_rule("monitoring", "*", fault)]))
                }
                Dependency::Elbv2 => {
                    self.world
                        .inject(json!([aws_rule("elasticloadbalancing", "*", fault)]))
                }
                Dependency::Eks => self.world.inject(json!([aws_rule("eks", "*", fault)])),
                Dependency::Sns => self
                    .world
                    .inject(json!([aws_rule("sns", "Publish", fault)])),
                Dependency::Sqs => {
                    self.world
                        .inject(json!([aws_rule("sqs", "SendMessage", fault)]))
                }
                Dependency::Kubernetes => {
                    self.inject_http(self.world.var("KUBE_API_URL"), http_rule("^/api", fault))
                }
                Dependency::Prometheus => {
                    self.inject_http(
                        self.world.var("PROMETHEUS_FAULT_URL"),
                        http_rule("/api/v1/", fault),
                    );
                }
                Dependency::Slack => {}
            }
        }
        let triage = Triage {
            collection: Collection::Live(sources),
            publisher: destinations,
            budget: Budget {
                overall: GATHER,
                per_source: PER_CALL,
                publish: PUBLISH,
                ..Budget::default()
            },
            classifier: ClassifierConfig::default(),
        };
        let started = Instant::now();
        let mut outcomes = triage
            .handle_bytes(&self.event, Now::At(chrono::Utc::now()))
            .await
            .unwrap();
        (started.elapsed(), outcomes.remove(0))
    }

    /// Posts world 1's diagnosis to the local Slack through a webhook, under the deadline.
    async fn notify(&self, fault: Fault) -> (Duration, Result<(), String>) {
        let webhook = match fault {
            Fault::Refused => format!("{}/services/T0/B0/closed", closed_port()),
            _ => self.slack.webhooks["#alerts"].clone(),
        };
        let answers = match fault {
            Fault::Throttled => {
                vec![json!({"status": 429, "retry_after": 1, "body": "rate_limited"}); 30]
            }
            Fault::ServerError => vec![json!({"status": 500, "body": "internal_error"}); 30],
            Fault::AccessDenied => vec![json!({"status": 403, "body": "invalid_token"})],
            Fault::Hangs => vec![json!({"delay_ms": HANG_MS}); 10],
            Fault::Refused => vec![],
        };
        self.slack.script(Value::Array(answers));
        let credentials = SlackCredentials::Webhooks(BTreeMap::from([(
            "#alerts".to_owned(),
            SecretString::from(webhook),
        )]));
        let notifier = Notifier {
            poster: SlackWebhook::new(credentials, format!("{}/api", self.slack.url)).unwrap(),
            threads: NoThreads,
            routes: Routes::parse(None, "#alerts").unwrap(),
            thread_lifetime: chrono::Duration::hours(24),
            retry: RetryPolicy {
                request_timeout: PER_CALL,
                ..RetryPolicy::default()
            },
            attachments: alarm_triage::notify::delivery::no_attachments,
            incident_window: None,
            hold_seconds: 0,
        };
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + GATHER + PUBLISH;
        let result = notifier
            .notify(&self.diagnosis, chrono::Utc::now(), deadline)
            .await;
        let elapsed = started.elapsed();
        (
            elapsed,
            match result {
                Ok(posted) => Err(format!("posted although Slack failed: {posted:?}")),
                Err(e) => {
                    let wanted = if fault == Fault::AccessDenied {
                        "slack_rejected"
                    } else {
                        "slack_unavailable"
                    };
                    if e.kind() == wanted {
                        Ok(())
                    } else {
                        Err(format!("failed as {} ({e}), expected {wanted}", e.kind()))
                    }
                }
            },
        )
    }

    /// One case: what happened, and whether it is what must happen.
    async fn case(
        &self,
        dependency: Dependency,
        fault: Fault,
    ) -> (Duration, String, Result<(), String>) {
        self.clear();
        if dependency == Dependency::Slack {
            let (elapsed, verdict) = self.notify(fault).await;
            return (elapsed, "invocation fails".to_owned(), verdict);
        }
        let (elapsed, outcome) = self.diagnose(dependency, fault).await;
        let calls = self.world.calls(false);
        let verdict = match (&outcome, dependency) {
            (Outcome::Failed { error, .. }, Dependency::Sns | Dependency::Sqs) => {
                let told_people = calls.get("sns:Publish").copied().unwrap_or(0);
                if dependency == Dependency::Sqs && told_people > 0 {
                    Err(format!(
                        "SNS was published although the queue refused: {error}"
                    ))
                } else {
                    Ok(format!("invocation fails: {}", error.kind()))
                }
            }
            (
                Outcome::Report {
                    diagnosis,
                    published,
                },
                Dependency::Sns | Dependency::Sqs,
            ) => Err(format!(
                "published {published:?} ({}) although the destination failed",
                diagnosis.id
            )),
            (
                Outcome::Report {
                    diagnosis,
                    published,
                },
                _,
            ) => {
                let gap = diagnosis
                    .evidence_gaps
                    .iter()
                    .find(|g| g.source == gap_source(dependency));
                match gap {
                    _ if published.len() != 2 => Err(format!(
                        "published to {published:?}, expected the queue and the topic"
                    )),
                    Some(g) if expected_words(fault).iter().any(|w| g.reason.contains(w)) => {
                        Ok(format!("published; gap: {}", support_short(&g.reason)))
                    }
                    Some(g) => Err(format!("gap does not name the fault: {}", g.reason)),
                    None => Err(format!(
                        "no gap for {}: {:?}",
                        gap_source(dependency),
                        diagnosis.evidence_gaps
                    )),
                }
            }
            (other, _) => Err(format!("unexpected outcome {other:?}")),
        };
        match verdict {
            Ok(text) => (elapsed, text, Ok(())),
            Err(e) => (elapsed, String::new(), Err(e)),
        }
    }
}

fn support_short(text: &str) -> String {
    let short: String = text.chars().take(70).collect();
    if short.len() < text.len() {
        format!("{short}…")
    } else {
        short
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dependency_failing_every_way_ends_within_the_deadline_and_loses_nothing() {
    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let event = std::fs::read(world.deliver()).unwrap();
    let diagnosis: Diagnosis = serde_json::from_str(
        &std::fs::read_to_string(
            support::repo_root().join("tests/fixtures/diagnosis-alb-flapping-worker-ceiling.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let matrix = Matrix {
        world,
        event,
        slack: LocalSlack::start(&["#alerts"]),
        diagnosis,
    };
    let deadline = GATHER + PUBLISH;
    let mut table =
        String::from("| dependency | fault | wall ms | outcome |\n| --- | --- | ---: | --- |\n");
    let mut failures = Vec::new();
    for dependency in DEPENDENCIES {
        for fault in FAULTS {
            let (elapsed, text, verdict) = matrix.case(dependency, fault).await;
            let _ = writeln!(
                table,
                "| {dependency:?} | {fault:?} | {} | {text} |",
                elapsed.as_millis()
            );
            if let Err(e) = verdict {
                failures.push(format!("{dependency:?} x {fault:?}: {e}"));
            }
            if elapsed > deadline + NOISE {
                failures.push(format!(
                    "{dependency:?} x {fault:?}: took {elapsed:?}, past the {deadline:?} deadline"
                ));
            }
        }
    }
    matrix.clear();
    eprintln!("{table}");
    assert!(failures.is_empty(), "{failures:#?}");
}
