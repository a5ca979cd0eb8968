//! Evidence gathering: runs the sources a notification calls for, concurrently,
//! each under its own timeout and all under the invocation's deadline. Whatever
//! does not answer in time, or answers with an error, becomes an evidence gap
//! with the reason; the diagnosis is produced regardless.

use std::future::Future;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::alarm::AlarmNotification;
use crate::diagnosis::{EvidenceGap, SourceTiming, Timings};
use crate::error::{Error, Result};
use crate::history::AlarmHistory;
use crate::triage::GatheredEvidence;

/// Names of the evidence sources, as they appear in gaps and timings.
pub mod source {
    pub const ALARM_HISTORY: &str = "cloudwatch:DescribeAlarmHistory";
    pub const METRIC_STATISTICS: &str =
        "cloudwatch:GetMetricData (Average, p99, Maximum, RequestCount)";
    pub const TARGET_GROUPS: &str = "elbv2: target groups, attributes and target health";
    pub const KUBERNETES: &str = "kubernetes: service, pods, deployment, HPA";
    pub const POD_SERIES: &str = "prometheus: per-pod CPU and memory series";
}

/// Port: reads an alarm's state changes.
pub trait AlarmHistorySource: Send + Sync {
    /// State changes of `alarm_name` with timestamps in `[start, end]`, in any order.
    fn state_history(
        &self,
        alarm_name: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> impl Future<Output = Result<AlarmHistory>> + Send;
}

/// How evidence is collected for this run.
#[derive(Debug)]
pub enum Collection<H> {
    /// No AWS at all: every source is reported as not collected.
    Offline,
    /// Read from the sources given.
    Live { history: H },
}

/// Budgets for one gathering.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Time left for all gathering (the invocation's deadline minus a publish margin).
    pub overall: Duration,
    /// The most any one source may take.
    pub per_source: Duration,
    /// How far back to read history.
    pub lookback: chrono::Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            overall: Duration::from_secs(20),
            per_source: Duration::from_secs(10),
            lookback: chrono::Duration::hours(24),
        }
    }
}

/// The sources the playbook would read for this alarm, in order.
pub fn planned_sources(alarm: &AlarmNotification) -> Vec<&'static str> {
    let mut out = vec![source::ALARM_HISTORY];
    let metric = alarm.primary_metric();
    if metric.is_some() {
        out.push(source::METRIC_STATISTICS);
    }
    let is_alb = metric.as_ref().is_some_and(|m| {
        m.namespace.as_deref() == Some("AWS/ApplicationELB")
            && m.dimensions.iter().any(|d| d.name == "LoadBalancer")
    });
    if is_alb {
        out.extend([
            source::TARGET_GROUPS,
            source::KUBERNETES,
            source::POD_SERIES,
        ]);
    }
    out
}

/// Gathers the evidence for one notification.
pub async fn gather<H: AlarmHistorySource>(
    collection: &Collection<H>,
    alarm: &AlarmNotification,
    budget: Budget,
    now: DateTime<Utc>,
) -> GatheredEvidence {
    let started = Instant::now();
    let planned = planned_sources(alarm);
    let Collection::Live { history } = collection else {
        return GatheredEvidence {
            history: None,
            gaps: planned
                .into_iter()
                .map(|source| EvidenceGap {
                    source: source.to_owned(),
                    reason: "not collected (offline)".to_owned(),
                })
                .collect(),
            timings: Timings::default(),
        };
    };

    let limit = budget.per_source.min(budget.overall);
    let (history_result, history_timing) = timed(
        source::ALARM_HISTORY,
        limit,
        history.state_history(&alarm.alarm_name, now - budget.lookback, now),
    )
    .await;

    let mut gaps = Vec::new();
    let history = match history_result {
        Ok(h) => Some(h),
        Err(reason) => {
            gaps.push(EvidenceGap {
                source: source::ALARM_HISTORY.to_owned(),
                reason,
            });
            None
        }
    };
    gaps.extend(planned.into_iter().skip(1).map(|source| EvidenceGap {
        source: source.to_owned(),
        reason: "not collected: this release has no adapter for this source yet".to_owned(),
    }));
    GatheredEvidence {
        history,
        gaps,
        timings: Timings {
            total_ms: elapsed_ms(started),
            sources: vec![history_timing],
        },
    }
}

/// Runs one source under a timeout; an error or a timeout becomes the gap's reason.
async fn timed<T>(
    name: &'static str,
    limit: Duration,
    call: impl Future<Output = Result<T>>,
) -> (std::result::Result<T, String>, SourceTiming) {
    let started = Instant::now();
    let outcome = match tokio::time::timeout(limit, call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(gap_reason(&error)),
        Err(_) => Err(format!("no answer within {} ms", limit.as_millis())),
    };
    let timing = SourceTiming {
        source: name.to_owned(),
        ms: elapsed_ms(started),
        outcome: match &outcome {
            Ok(_) => "ok".to_owned(),
            Err(reason) => reason.clone(),
        },
    };
    (outcome, timing)
}

fn gap_reason(error: &Error) -> String {
    match error {
        Error::Source { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::StateChange;

    struct SlowHistory(Duration);
    impl AlarmHistorySource for SlowHistory {
        async fn state_history(
            &self,
            _: &str,
            _: DateTime<Utc>,
            _: DateTime<Utc>,
        ) -> Result<AlarmHistory> {
            tokio::time::sleep(self.0).await;
            Ok(AlarmHistory::from_unordered(Vec::<StateChange>::new()))
        }
    }

    struct DeniedHistory;
    impl AlarmHistorySource for DeniedHistory {
        async fn state_history(
            &self,
            _: &str,
            _: DateTime<Utc>,
            _: DateTime<Utc>,
        ) -> Result<AlarmHistory> {
            Err(Error::Source {
                source_name: source::ALARM_HISTORY,
                reason: "access denied: grant cloudwatch:DescribeAlarmHistory".to_owned(),
                retryable: false,
            })
        }
    }

    fn alarm() -> AlarmNotification {
        serde_json::from_str(
            r#"{"AlarmName":"a","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK",
                "StateChangeTime":"2026-11-29T10:00:00.000+0000",
                "Trigger":{"MetricName":"TargetResponseTime","Namespace":"AWS/ApplicationELB",
                  "Dimensions":[{"name":"LoadBalancer","value":"app/x/1"}]}}"#,
        )
        .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_source_that_misses_the_deadline_becomes_a_gap() {
        let budget = Budget {
            per_source: Duration::from_millis(50),
            ..Budget::default()
        };
        let got = gather(
            &Collection::Live {
                history: SlowHistory(Duration::from_secs(5)),
            },
            &alarm(),
            budget,
            Utc::now(),
        )
        .await;
        assert!(got.history.is_none());
        assert_eq!(got.gaps[0].source, source::ALARM_HISTORY);
        assert!(got.gaps[0].reason.contains("50 ms"), "{:?}", got.gaps);
    }

    #[tokio::test]
    async fn a_denied_source_names_the_missing_permission() {
        let got = gather(
            &Collection::Live {
                history: DeniedHistory,
            },
            &alarm(),
            Budget::default(),
            Utc::now(),
        )
        .await;
        assert!(
            got.gaps[0]
                .reason
                .contains("cloudwatch:DescribeAlarmHistory")
        );
    }

    #[tokio::test]
    async fn offline_reports_every_planned_source_as_not_collected() {
        let got = gather(
            &Collection::<DeniedHistory>::Offline,
            &alarm(),
            Budget::default(),
            Utc::now(),
        )
        .await;
        assert_eq!(got.gaps.len(), 5);
        assert!(
            got.gaps
                .iter()
                .all(|g| g.reason == "not collected (offline)")
        );
    }
}
